#!/usr/bin/env bash
# make docker-check: builds docker/Dockerfile's runtime stage for real with podman, around a
# binary built here (this machine reaches Debian's packages but not GitHub, and runs no Docker
# engine), on a debian:bookworm-slim made here with debootstrap; during the build the image's
# user starts the server, waits for it to be ready, writes, reads, and stops it
# (docker/smoke-test.sh). Needs root (debootstrap, podman --isolation chroot).
set -euo pipefail
cd "$(dirname "$0")/.."
SWIFT=${SWIFT:-swift}
SCRATCH=${STATIC_SCRATCH:-.build-static}
BASE=docker.io/library/debian:bookworm-slim
MIRROR=${DEBIAN_MIRROR:-http://deb.debian.org/debian}

need() { command -v "$1" >/dev/null || { [ "$(id -u)" = 0 ] && apt-get install -y -q "$2" >/dev/null; } || { echo "docker-check: needs $1 (apt-get install $2)" >&2; exit 1; }; }
need podman podman
need debootstrap debootstrap

if ! podman image exists "$BASE"; then
  rootfs=$(mktemp -d)
  echo "docker-check: making $BASE with debootstrap (minbase)..." >&2
  debootstrap --variant=minbase bookworm "$rootfs" "$MIRROR" >/dev/null
  # What the official slim image leaves out: docs, man pages, apt lists.
  rm -rf "$rootfs"/usr/share/doc/* "$rootfs"/usr/share/man/* "$rootfs"/var/lib/apt/lists/* "$rootfs"/var/cache/apt/*.bin
  tar -C "$rootfs" -c . | podman import --change 'CMD ["bash"]' - "$BASE" >/dev/null
  rm -rf "$rootfs"
fi

echo "docker-check: building the release binary (Swift's runtime linked statically)..." >&2
$SWIFT build -c release --product managedstore --static-swift-stdlib --scratch-path "$SCRATCH" 2>&1 | tail -1 >&2

# The runtime stage of docker/Dockerfile as it is, taking the binary from the context instead of
# the build stage, and the smoke test run as the image's user at the end.
context=$(mktemp -d)
trap 'rm -rf "$context"' EXIT
cp "$SCRATCH/release/managedstore" docker/smoke-test.sh "$context/"
sed -n '/^FROM debian:bookworm-slim AS runtime/,$p' docker/Dockerfile \
  | sed 's|^COPY --from=build /out/managedstore |COPY managedstore |' > "$context/Containerfile"
grep -q '^COPY managedstore ' "$context/Containerfile" || { echo "docker-check: docker/Dockerfile has no runtime stage to check" >&2; exit 1; }
cat >> "$context/Containerfile" <<'STEPS'
COPY smoke-test.sh /usr/local/bin/smoke-test.sh
RUN smoke-test.sh
STEPS
echo "docker-check: podman build (runtime stage, smoke test inside)..." >&2
podman build --isolation chroot --pull=never --format docker -t managedstore-check -f "$context/Containerfile" "$context"
# What the image says of itself (docker format: OCI images drop HEALTHCHECK).
podman image inspect managedstore-check --format 'image: user={{.Config.User}} volumes={{.Config.Volumes}} ports={{.Config.ExposedPorts}} healthcheck={{.Config.Healthcheck.Test}} stopsignal={{.Config.StopSignal}} entrypoint={{.Config.Entrypoint}} cmd={{.Config.Cmd}} size={{.Size}}'
echo "docker-check: ok" >&2
