#ifndef MANAGEDSTORE_BENCH_SQLITE_SHIM_H
#define MANAGEDSTORE_BENCH_SQLITE_SHIM_H
#include <sqlite3.h>
#include <malloc.h>  // mallinfo2, for the heap in use (Memory.swift)

// SQLITE_TRANSIENT is a macro Swift cannot import: binding with it makes SQLite copy the bytes.
static inline sqlite3_destructor_type bench_sqlite_transient(void) { return SQLITE_TRANSIENT; }
#endif
