// kiln: the command-line client. Exit status 0 on success, 1 on a user error (one line on
// stderr), 2 on a usage error — the contract of docs/ARCHITECTURE.md and DESIGN §8.
#include <grpcpp/grpcpp.h>

#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>

#include "CLI/CLI.hpp"
#include "absl/strings/match.h"
#include "compiler/relax/block_builder.h"
#include "compiler/relax/well_formed.h"
#include "compiler/script/printer.h"
#include "compiler/script/script_parser.h"
#include "compiler/wire/ir_proto.h"
#include "proto/kiln/v1/service.grpc.pb.h"
#include "server/build_info.h"

namespace {

constexpr int kExitUserError = 1;
constexpr int kExitUsage = 2;

int PrintLocalVersions() {
  for (const auto& [name, version] : kiln::server::ComponentVersions()) {
    std::printf("%-9s %s\n", name.c_str(), version.c_str());
  }
  return 0;
}

int PrintServerInfo(const std::string& address, int timeout_seconds) {
  auto stub =
      kiln::v1::Kiln::NewStub(grpc::CreateChannel(address, grpc::InsecureChannelCredentials()));
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(timeout_seconds));
  kiln::v1::ServerInfo info;
  grpc::Status status = stub->GetServerInfo(&context, kiln::v1::GetServerInfoRequest(), &info);
  if (!status.ok()) {
    std::fprintf(stderr, "kiln: server %s: %s\n", address.c_str(), status.error_message().c_str());
    return kExitUserError;
  }
  std::printf("server    %s\n", address.c_str());
  std::printf("host      %s\n", info.host_target_triple().c_str());
  for (const auto& component : info.components()) {
    std::printf("%-9s %s\n", component.name().c_str(), component.version().c_str());
  }
  return 0;
}

// Reads a module: TVMScript (.py) or protobuf IR (.pb). ONNX (.onnx) arrives with its importer.
absl::StatusOr<kiln::ir::IRModule> LoadModule(const std::string& path) {
  bool script = absl::EndsWith(path, ".py");
  if (!script && !absl::EndsWith(path, ".pb")) {
    return absl::UnimplementedError("expected TVMScript (.py) or protobuf IR (.pb)");
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError("cannot open the file");
  std::ostringstream bytes;
  bytes << in.rdbuf();
  if (script) return kiln::script::ParseScript(bytes.str(), path);
  return kiln::wire::DeserializeModule(bytes.str());
}

// One line naming the file: parse errors already start with `path:line:col:`.
std::string Reason(const std::string& path, const absl::Status& status) {
  std::string message(status.message());
  message = message.substr(0, message.find('\n'));
  return absl::StartsWith(message, path + ":") ? message : path + ": " + message;
}

// kiln print FILE: the normalized module as text.
int PrintModule(const std::string& path) {
  absl::StatusOr<kiln::ir::IRModule> mod = LoadModule(path);
  if (mod.ok()) mod = kiln::ir::relax::NormalizeModule(*mod);
  if (!mod.ok()) {
    std::fprintf(stderr, "kiln: %s\n", Reason(path, mod.status()).c_str());
    return kExitUserError;
  }
  std::printf("%s", kiln::script::PrintScript(*mod).c_str());
  return 0;
}

// kiln check FILE: every well-formedness violation, then StructInfo errors; exit 1 if any.
int CheckModule(const std::string& path) {
  absl::StatusOr<kiln::ir::IRModule> mod = LoadModule(path);
  if (!mod.ok()) {
    // A parse error: the located message with the offending line, then the one-line summary.
    std::printf("%s\n", std::string(mod.status().message()).c_str());
    std::fprintf(stderr, "kiln: %s\n", Reason(path, mod.status()).c_str());
    return kExitUserError;
  }
  // Structure first (without normal form: the input need not be normalized yet).
  kiln::ir::relax::WellFormedOptions options;
  options.check_normal_form = false;
  int errors = 0;
  for (const auto& v : kiln::ir::relax::FindWellFormedViolations(*mod, options)) {
    std::printf("%s: %s\n", path.c_str(), v.ToString().c_str());
    ++errors;
  }
  if (errors == 0) {
    absl::StatusOr<kiln::ir::IRModule> normalized = kiln::ir::relax::NormalizeModule(*mod);
    if (!normalized.ok()) {
      std::printf("%s: [StructInfo] %s\n", path.c_str(),
                  std::string(normalized.status().message()).c_str());
      ++errors;
    }
  }
  if (errors > 0) {
    std::fprintf(stderr, "kiln: %s: %d error%s\n", path.c_str(), errors, errors == 1 ? "" : "s");
    return kExitUserError;
  }
  std::printf("%s: ok (%zu functions)\n", path.c_str(), (*mod)->functions.size());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"kiln: compile, run and benchmark ML models with Kiln"};
  app.require_subcommand(1);

  CLI::App* version = app.add_subcommand("version", "print the versions this client links");
  CLI::App* info = app.add_subcommand("info", "print what a kilnd server runs");
  std::string server_address;
  int timeout_seconds = 10;
  info->add_option("--server", server_address, "kilnd address, host:port")->required();
  info->add_option("--timeout", timeout_seconds, "seconds to wait for the server")
      ->check(CLI::PositiveNumber);

  std::string file;
  CLI::App* print = app.add_subcommand("print", "parse a module and print it normalized");
  print->add_option("FILE", file, "TVMScript (.py) or protobuf IR (.pb)")->required();
  CLI::App* check =
      app.add_subcommand("check", "report every well-formedness and StructInfo error");
  check->add_option("FILE", file, "TVMScript (.py) or protobuf IR (.pb)")->required();

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    app.exit(e);  // prints the reason and usage
    return kExitUsage;
  }

  if (*version) return PrintLocalVersions();
  if (*info) return PrintServerInfo(server_address, timeout_seconds);
  if (*print) return PrintModule(file);
  if (*check) return CheckModule(file);
  return kExitUsage;
}
