# kilnd (with kiln-worker beside it) on Debian 12, built by the project's own setup script.
#   docker build -f deploy/docker/kilnd.Dockerfile -t kiln/kilnd .
#   docker run -p 7077:7077 kiln/kilnd --postgres postgresql://kiln@db:5432/kiln
FROM debian:12 AS build
COPY . /src
WORKDIR /src
RUN bash tools/setup.sh \
 && bazel build --config=opt //server:kilnd //server:kiln-worker //client:kiln \
 && install -m 755 bazel-bin/server/kilnd bazel-bin/server/kiln-worker bazel-bin/client/kiln \
      /usr/local/bin/ \
 && bazel clean --expunge && rm -rf /root/.cache

# The same packages at run time (kiln-worker links LLVM and runs ld.lld-16), without the tree.
FROM debian:12
COPY --from=build /src/tools/setup.sh /tmp/setup.sh
RUN bash /tmp/setup.sh && rm -rf /var/lib/apt/lists/* /tmp/setup.sh
COPY --from=build /usr/local/bin/kilnd /usr/local/bin/kiln-worker /usr/local/bin/kiln /usr/local/bin/
RUN useradd --system --home /var/lib/kiln --create-home kiln
USER kiln
EXPOSE 7077 9077
# The state is /var/lib/kiln alone, or PostgreSQL with --postgres (then only local copies).
VOLUME /var/lib/kiln
ENTRYPOINT ["/usr/local/bin/kilnd", "--listen", "0.0.0.0:7077", "--store", "/var/lib/kiln", \
            "--metrics-port", "9077", "--metrics-address", "0.0.0.0"]
