#!/usr/bin/env bash
# Installs every Debian 12 package that Kiln's build, tests and main job need.
# Idempotent: when everything is present it prints nothing and touches nothing.
set -euo pipefail

PACKAGES=(
  # Build system and toolchain; python3 for tools/check_docs.py, and Prometheus's text-format
  # parser for the metrics test.
  bazel-bootstrap g++ clang-format python3 python3-prometheus-client
  # RPC and serialization.
  libgrpc++-dev protobuf-compiler-grpc protobuf-compiler libprotobuf-dev
  # Core libraries.
  libabsl-dev
  # Code generation (LLVM 16 and its link dependencies).
  llvm-16-dev lld-16 libzstd-dev zlib1g-dev libtinfo-dev libxml2-dev libedit-dev libffi-dev
  # Runtime tensors.
  libdlpack-dev
  # Tests and benchmarks.
  libgtest-dev libgmock-dev libbenchmark-dev
  # JSON (TVM's metadata section in printed modules).
  nlohmann-json3-dev
  # Fuzzing (clang with libFuzzer and AddressSanitizer).
  clang libclang-rt-14-dev
  # Peers for kernel benchmarks (OpenBLAS for matmuls, oneDNN for every kernel family).
  libopenblas-dev libdnnl-dev
  # Command line.
  libcli11-dev
  # kilnd's HTTP side: /metrics and the dashboard (event-driven, IPv4 and IPv6, keep-alive,
  # TLS through GnuTLS); cpp-httplib is the tests' HTTPS client.
  libmicrohttpd-dev libgnutls28-dev libcpp-httplib-dev
  # The tuner's cost model (gradient-boosted trees).
  libxgboost-dev
  # Embedded state store; PostgreSQL for a cluster's shared store (the server too: its tests
  # start one in a temporary directory).
  libsqlite3-dev libpq-dev postgresql
  # The cluster's load balancer, run by tests:cluster_e2e_test with deploy/nginx/kiln.conf.
  nginx-light
  # Content digests and Ed25519 signatures of artifacts; openssl makes the service tests' TLS
  # certificates.
  libssl-dev openssl
  # The agent's task children refuse sockets and other processes' memory (a seccomp filter).
  libseccomp-dev
  # ONNX models: the protobuf definitions the importer reads.
  libonnx-dev
  # ONNX's backend test suites (tests:onnx_conformance_test).
  libonnx-testdata
  # The Python client (client/python): gRPC, protobuf and NumPy for Debian's python3; pytest for
  # its tests (its stubs come from protoc and protobuf-compiler-grpc's grpc_python_plugin).
  python3-grpcio python3-protobuf python3-numpy python3-pytest
  # A torch.nn.Module given to the Python client is exported to ONNX on the client (its test).
  python3-torch
  # The dashboard's tests: a real headless Chromium driven by Selenium.
  chromium chromium-driver python3-selenium
  # Edge boards: the aarch64 cross compiler, the arm64 builds of what kiln-agent links (Debian
  # multiarch), and qemu-user, which runs the aarch64 agent and kernels in the tests and the demo.
  g++-aarch64-linux-gnu qemu-user
  libgrpc++-dev:arm64 libprotobuf-dev:arm64 libabsl-dev:arm64 libssl-dev:arm64
  libseccomp-dev:arm64
)

missing=()
for pkg in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$pkg")
  fi
done
[ ${#missing[@]} -eq 0 ] && exit 0

SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
echo "setup: installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
if ! dpkg --print-foreign-architectures | grep -qx arm64; then
  $SUDO dpkg --add-architecture arm64
fi
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
