# The server in a container. `make image` builds the binary on the host (Debian 12, Swift's
# standard library and Foundation linked in statically) and runs this file with only that
# binary as the build context; the image needs just the C libraries the binary links.
#
#   make image                                     # docker, or podman when there is no docker
#   docker run -p 8080:8080 -v managedstore-data:/data managedstore
#   curl -s localhost:8080/v1/readyz
#
# The store lives in the /data volume, so it outlives the container. Arguments after the image
# name replace the default ones, e.g. `docker run ... managedstore --model /data/model.json
# --store /data/store.sqlite --host 0.0.0.0`.
FROM debian:bookworm-slim
RUN apt-get update \
 && apt-get install -y --no-install-recommends libsqlite3-0 libmicrohttpd12 libstdc++6 \
 && rm -rf /var/lib/apt/lists/*
COPY managedstore /usr/local/bin/managedstore
# Stops the build if the binary misses a library on this base.
RUN managedstore serve --help >/dev/null
VOLUME /data
EXPOSE 8080
# The server stops cleanly on SIGTERM (docker stop): it answers what is queued, then exits.
ENTRYPOINT ["managedstore", "serve"]
CMD ["--demo", "--store", "/data/demo.sqlite", "--host", "0.0.0.0", "--port", "8080"]
