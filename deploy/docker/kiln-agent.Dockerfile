# kiln-agent on Debian 12, built by the project's own setup script. For an Arm board, copy
# kiln-agent-aarch64.tar.gz instead (bazel build -c opt //runtime/agent:kiln-agent-aarch64.tar.gz).
#   docker build -f deploy/docker/kiln-agent.Dockerfile -t kiln/kiln-agent .
#   docker run -v /etc/kiln/signing_key.pub:/keys/kilnd.pub:ro kiln/kiln-agent \
#     --server kiln.example:7070 --device-key lab-x86-1 --trusted-keys /keys/kilnd.pub
FROM debian:12 AS build
COPY . /src
WORKDIR /src
RUN bash tools/setup.sh \
 && bazel build --config=opt //runtime/agent:kiln-agent \
 && install -m 755 bazel-bin/runtime/agent/kiln-agent /usr/local/bin/ \
 && bazel clean --expunge && rm -rf /root/.cache

# The agent links gRPC, protobuf, Abseil and OpenSSL only.
FROM debian:12
RUN apt-get update -qq \
 && apt-get install -y -qq --no-install-recommends libgrpc++1.51 libprotobuf32 libabsl20220623 \
      libssl3 ca-certificates \
 && rm -rf /var/lib/apt/lists/*
COPY --from=build /usr/local/bin/kiln-agent /usr/local/bin/
RUN useradd --system --create-home kiln
USER kiln
ENTRYPOINT ["/usr/local/bin/kiln-agent", "--cache-dir", "/home/kiln/cache"]
