// The kiln.v1.Kiln service: the client-facing RPCs of kilnd.
#ifndef KILN_SERVER_KILN_SERVICE_H_
#define KILN_SERVER_KILN_SERVICE_H_

#include "proto/kiln/v1/service.grpc.pb.h"

namespace kiln::server {

class KilnService final : public kiln::v1::Kiln::Service {
 public:
  grpc::Status GetServerInfo(grpc::ServerContext* context,
                             const kiln::v1::GetServerInfoRequest* request,
                             kiln::v1::ServerInfo* response) override;
};

}  // namespace kiln::server

#endif  // KILN_SERVER_KILN_SERVICE_H_
