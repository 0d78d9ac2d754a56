#include "server/dashboard.h"

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "google/protobuf/util/json_util.h"
#include "nlohmann/json.hpp"
#include "server/dashboard_assets.h"
#include "server/service_edge.h"

namespace kiln::server {
namespace {

constexpr char kJson[] = "application/json";

std::string Json(const google::protobuf::Message& m) {
  std::string out;
  google::protobuf::util::JsonPrintOptions options;
  options.preserve_proto_field_names = true;
  options.always_print_primitive_fields = true;
  if (!google::protobuf::util::MessageToJsonString(m, &out, options).ok()) return "null";
  return out;
}

HttpResponse Error(int status, const std::string& message) {
  return {status, kJson, nlohmann::json({{"error", message}}).dump()};
}

HttpResponse Jobs(const DashboardContext& ctx, const Principal& caller, const HttpRequest& r) {
  v1::JobState state = v1::JOB_STATE_UNSPECIFIED;
  if (auto s = r.params.find("state"); s != r.params.end() && !s->second.empty()) {
    if (!v1::JobState_Parse("JOB_STATE_" + absl::AsciiStrToUpper(s->second), &state)) {
      return Error(400, absl::StrCat("state: no state '", s->second, "'"));
    }
  }
  v1::JobKind kind = v1::JOB_KIND_UNSPECIFIED;
  if (auto k = r.params.find("kind"); k != r.params.end() && !k->second.empty()) {
    if (!v1::JobKind_Parse("JOB_KIND_" + absl::AsciiStrToUpper(k->second), &kind)) {
      return Error(400, absl::StrCat("kind: no kind '", k->second, "'"));
    }
  }
  int limit = 100;
  if (auto l = r.params.find("limit"); l != r.params.end()) {
    if (!absl::SimpleAtoi(l->second, &limit) || limit < 1 || limit > 1000) {
      return Error(400, "limit: a number from 1 to 1000");
    }
  }
  std::vector<v1::Job> jobs = ctx.jobs->List(state, kind == v1::JOB_KIND_UNSPECIFIED ? limit : 1000,
                                             caller.admin ? "" : caller.name);
  std::string body = "{\"jobs\": [";
  int n = 0;
  for (v1::Job& job : jobs) {
    if (kind != v1::JOB_KIND_UNSPECIFIED && job.kind() != kind) continue;
    if (n == limit) break;
    job.clear_inference();  // outputs are bulk; the job's page has them
    absl::StrAppend(&body, n++ ? ", " : "", Json(job));
  }
  return {200, kJson, body + "]}"};
}

HttpResponse OneJob(const DashboardContext& ctx, const Principal& caller, const std::string& id) {
  absl::StatusOr<v1::Job> job = ctx.jobs->Get(id);
  // Another principal's job is answered as one that does not exist, as on the gRPC API.
  if (!job.ok() || (!caller.admin && job->client() != caller.name)) {
    return Error(404, absl::StrCat("no job '", id, "'"));
  }
  OutputsForTheWire(&*job);  // as GetJob: small outputs inline, large ones named
  std::string body = absl::StrCat("{\"job\": ", Json(*job), ", \"events\": [");
  absl::StatusOr<std::vector<v1::JobEvent>> events = ctx.jobs->Events(id);
  int n = 0;
  for (v1::JobEvent& e : events.ok() ? *events : std::vector<v1::JobEvent>()) {
    e.clear_job();  // the job as it was at each event: the current one is above
    absl::StrAppend(&body, n++ ? ", " : "", Json(e));
  }
  return {200, kJson, body + "]}"};
}

HttpResponse Devices(const DashboardContext& ctx, const Principal& caller) {
  std::string body = "{\"devices\": [";
  int n = 0;
  for (const v1::Device& d : UsableDevices(*ctx.jobs, caller)) {
    absl::StrAppend(&body, n++ ? ", " : "", Json(d));
  }
  return {200, kJson, body + "]}"};
}

HttpResponse Status(const DashboardContext& ctx) {
  JobStats s = ctx.jobs->Stats();
  nlohmann::json jobs = nlohmann::json::object();
  for (const auto& [state, count] : s.jobs_by_state) {
    jobs[absl::AsciiStrToLower(v1::JobState_Name(state).substr(10))] = count;
  }
  nlohmann::json status = {{"jobs", jobs},
                           {"workers", ctx.jobs->options().workers},
                           {"workers_busy", s.workers_busy},
                           {"compile_queue", s.compile_queue},
                           {"device_queue", s.task_queue},
                           {"agents_connected", s.agents_connected},
                           {"compiles", s.compiles},
                           {"compile_seconds", s.compile_seconds},
                           {"cache",
                            {{"hits", ctx.cache->hits()},
                             {"misses", ctx.cache->misses()},
                             {"evictions", ctx.cache->evictions()},
                             {"bytes", ctx.store->TotalArtifactBytes().value_or(-1)},
                             {"max_bytes", ctx.cache->max_bytes()}}}};
  return {200, kJson, status.dump()};
}

}  // namespace

HttpResponse ServeHttp(const DashboardContext& ctx, const HttpRequest& request) {
  const std::string& path = request.path;
  if (path == "/metrics") return {200, "text/plain; version=0.0.4", ctx.metrics()};
  // The page and its assets hold no data: anyone may load them; the API asks for a token.
  if (path == "/" || path == "/index.html") return {200, "text/html; charset=utf-8", kIndexHtml};
  if (path == "/app.js") return {200, "text/javascript; charset=utf-8", kAppJs};
  if (path == "/style.css") return {200, "text/css; charset=utf-8", kStyleCss};
  if (!absl::StartsWith(path, "/api/")) return Error(404, absl::StrCat("no page ", path));
  absl::StatusOr<Principal> caller =
      AuthorizeBearer(*ctx.auth(), request.authorization, Role::kClient, request.client_cn);
  if (!caller.ok()) return Error(401, std::string(caller.status().message()));
  if (path == "/api/jobs") return Jobs(ctx, *caller, request);
  if (absl::StartsWith(path, "/api/jobs/")) return OneJob(ctx, *caller, path.substr(10));
  if (path == "/api/devices") return Devices(ctx, *caller);
  if (path == "/api/status") return Status(ctx);
  return Error(404, absl::StrCat("no API ", path));
}

}  // namespace kiln::server
