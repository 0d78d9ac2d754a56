// The dashboard's page, script and style (server/dashboard/), compiled into kilnd by the
// dashboard_assets genrule: nothing is loaded from anywhere else.
#ifndef KILN_SERVER_DASHBOARD_ASSETS_H_
#define KILN_SERVER_DASHBOARD_ASSETS_H_

namespace kiln::server {

extern const char kIndexHtml[];
extern const char kAppJs[];
extern const char kStyleCss[];

}  // namespace kiln::server

#endif  // KILN_SERVER_DASHBOARD_ASSETS_H_
