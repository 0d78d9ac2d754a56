// The dashboard and the metrics on kilnd's HTTP port: `/` is a single page (its script and style
// compiled into the binary, nothing from elsewhere) over a read-only JSON API —
//   /api/jobs?state=&kind=&limit=   the newest jobs (the caller's; everyone's for an admin)
//   /api/jobs/ID                   a job and its events
//   /api/devices                   devices, their attributes and health
//   /api/status                    the worker pool, the queues, the cache, the agents
// — with the same client tokens as the gRPC API (Authorization: Bearer TOKEN) when tokens are
// configured; /metrics is Prometheus text for scrapers, as before.
#ifndef KILN_SERVER_DASHBOARD_H_
#define KILN_SERVER_DASHBOARD_H_

#include <functional>
#include <memory>
#include <string>

#include "server/artifact_cache.h"
#include "server/auth.h"
#include "server/http_server.h"
#include "server/jobs/job_manager.h"
#include "server/store.h"

namespace kiln::server {

struct DashboardContext {
  JobManager* jobs = nullptr;
  ArtifactCache* cache = nullptr;
  Store* store = nullptr;
  std::function<std::shared_ptr<const AuthConfig>()> auth;  // the tokens in force
  std::function<std::string()> metrics;                     // Prometheus text
};

// Answers one GET request.
HttpResponse ServeHttp(const DashboardContext& ctx, const HttpRequest& request);

}  // namespace kiln::server

#endif  // KILN_SERVER_DASHBOARD_H_
