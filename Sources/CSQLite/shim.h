#ifndef MANAGEDSTORE_CSQLITE_SHIM_H
#define MANAGEDSTORE_CSQLITE_SHIM_H
#include <sqlite3.h>

// SQLITE_TRANSIENT is a macro casting -1 to a function pointer, which Swift cannot import.
// Binding with it makes SQLite copy the bytes, so a Swift buffer may go away after the bind.
static inline sqlite3_destructor_type csqlite_transient(void) { return SQLITE_TRANSIENT; }
#endif
