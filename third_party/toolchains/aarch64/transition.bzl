"""aarch64_binary: a cc_binary built for aarch64-linux-gnu inside an x86-64 build.

Tests that run board code under qemu-aarch64 take such a binary as data, so one `bazel test`
builds both architectures (the cross toolchain is //third_party/toolchains/aarch64).
"""

def _to_aarch64_impl(settings, attr):
    return {
        "//command_line_option:cpu": "aarch64",
        "//command_line_option:crosstool_top": "//third_party/toolchains/aarch64:suite",
        "//command_line_option:host_crosstool_top": "@bazel_tools//tools/cpp:toolchain",
    }

_to_aarch64 = transition(
    implementation = _to_aarch64_impl,
    inputs = [],
    outputs = [
        "//command_line_option:cpu",
        "//command_line_option:crosstool_top",
        "//command_line_option:host_crosstool_top",
    ],
)

def _aarch64_binary_impl(ctx):
    binary = ctx.attr.binary[0][DefaultInfo].files_to_run.executable
    out = ctx.actions.declare_file(ctx.label.name)
    ctx.actions.run_shell(
        inputs = [binary],
        outputs = [out],
        command = "cp -L '%s' '%s'" % (binary.path, out.path),
        mnemonic = "CopyAarch64Binary",
    )
    return [DefaultInfo(files = depset([out]), runfiles = ctx.runfiles(files = [out]))]

aarch64_binary = rule(
    implementation = _aarch64_binary_impl,
    attrs = {
        "binary": attr.label(cfg = _to_aarch64, mandatory = True),
        "_allowlist_function_transition": attr.label(
            default = "@bazel_tools//tools/allowlists/function_transition_allowlist",
        ),
    },
    doc = "The cc_binary `binary`, built for aarch64-linux-gnu, as a file named after this rule.",
)
