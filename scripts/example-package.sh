#!/usr/bin/env bash
# The example a Core Data user would make (Examples/ReadingList, `make test-example`, part of
# `make test`): a package with a path dependency on ManagedStore, its `.xcdatamodeld` in its
# target and the GenerateTypedViews plugin. Builds it as a user would (`swift build` in the
# package) and runs it; with ../shared/coredata-models present, also its KiwixViews target on
# Kiwix's model as that app ships it.
#
# The example depends on `../ManagedStore`, ManagedStore checked out beside it: here
# Examples/ManagedStore, a link to this repository made below, so that the package is named
# `ManagedStore` whatever this checkout's folder is called (SwiftPM names a path dependency
# after its folder).
#
# Environment: SWIFT (default swift), SWIFT_BUILD_FLAGS (more `swift build` arguments).
set -euo pipefail
cd "$(dirname "$0")/.."
SWIFT=${SWIFT:-swift}
read -r -a build_flags <<<"${SWIFT_BUILD_FLAGS:-}"
PACKAGE=Examples/ReadingList
KIWIX_SOURCE=../shared/coredata-models/Kiwix.xcdatamodeld
KIWIX_TARGET=$PACKAGE/Sources/KiwixViews/Kiwix.xcdatamodeld

ln -sfn .. Examples/ManagedStore

rm -rf "$KIWIX_TARGET"
products=(ReadingList)
if [ -d "$KIWIX_SOURCE" ]; then
    cp -R "$KIWIX_SOURCE" "$KIWIX_TARGET"
    chmod -R u+w "$KIWIX_TARGET"   # the shared copy is read-only
    products+=(KiwixViews)
else
    echo "example package: $KIWIX_SOURCE is absent: KiwixViews (Kiwix's model) is not built"
fi

log=$(mktemp)
trap 'rm -f "$log"; rm -rf "$KIWIX_TARGET"' EXIT
for product in "${products[@]}"; do
    started=$(date +%s)
    if ! "$SWIFT" build "${build_flags[@]}" --package-path "$PACKAGE" --product "$product" >"$log" 2>&1; then
        grep -E "error|warning: " "$log" | head -60 >&2
        echo "example package: $product did not build" >&2
        exit 1
    fi
    echo "example package: $product built in $(( $(date +%s) - started )) s"
    # The model's typed classes come from the plugin, nowhere else: no "unhandled" bundle
    # warning for the one the target declares, and every generated view compiled.
    if [ "$product" = ReadingList ] && grep -q "unhandled" "$log"; then
        grep -A2 "unhandled" "$log" >&2
        echo "example package: SwiftPM did not take Reading.xcdatamodeld as the target's resource" >&2
        exit 1
    fi
done

bin=$("$SWIFT" build --package-path "$PACKAGE" --show-bin-path)
"$bin/ReadingList"
if [[ " ${products[*]} " == *" KiwixViews "* ]]; then
    "$bin/KiwixViews" "$KIWIX_TARGET"
fi
