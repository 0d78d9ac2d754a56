"""kiln_proto_library: C++ message (and optionally gRPC) code from .proto files.

Bazel 4.2.3 offline has no protobuf rules of its own, so a genrule calls the system `protoc`
(Debian's protobuf-compiler) with `grpc_cpp_plugin` (protobuf-compiler-grpc). Imports are
resolved from the workspace root, e.g. `import "proto/kiln/v1/ir.proto";`, and generated headers
are included the same way: `#include "proto/kiln/v1/ir.pb.h"`.
"""

def kiln_proto_library(name, srcs, deps = [], grpc = False, visibility = None):
    """Declares `name` (a cc_library) and `name + "_protos"` (the .proto files, for importers).

    Args:
      name: the cc_library to create.
      srcs: .proto files in this package.
      deps: other kiln_proto_library targets whose files srcs import.
      grpc: also generate gRPC service stubs.
      visibility: visibility of the generated targets.
    """
    native.filegroup(
        name = name + "_protos",
        srcs = srcs + [d + "_protos" for d in deps],
        visibility = visibility,
    )

    hdrs = []
    cc_srcs = []
    for src in srcs:
        if not src.endswith(".proto"):
            fail("kiln_proto_library srcs must be .proto files: " + src)
        stem = src[:-len(".proto")]
        hdrs.append(stem + ".pb.h")
        cc_srcs.append(stem + ".pb.cc")
        if grpc:
            hdrs.append(stem + ".grpc.pb.h")
            cc_srcs.append(stem + ".grpc.pb.cc")

    plugin = ""
    if grpc:
        plugin = ("--plugin=protoc-gen-grpc=$$(command -v grpc_cpp_plugin) " +
                  "--grpc_out=$(GENDIR) ")
    native.genrule(
        name = name + "_gen",
        srcs = srcs + [d + "_protos" for d in deps],
        outs = hdrs + cc_srcs,
        cmd = ("protoc --proto_path=. --cpp_out=$(GENDIR) " + plugin +
               " ".join(["$(location %s)" % s for s in srcs])),
        message = "Generating C++ from " + ", ".join(srcs),
    )

    native.cc_library(
        name = name,
        srcs = cc_srcs,
        hdrs = hdrs,
        deps = [d for d in deps] + ["//third_party:protobuf"] +
               (["//third_party:grpc"] if grpc else []),
        visibility = visibility,
    )
