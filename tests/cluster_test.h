// The fixture of the service tests: a real kilnd with `agents` agents of device key "cpu" and a
// client library connected to it (tests/service_cluster.h starts them).
#ifndef KILN_TESTS_CLUSTER_TEST_H_
#define KILN_TESTS_CLUSTER_TEST_H_

#include <memory>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "tests/service_cluster.h"

namespace kiln::testing {

class ClusterTest : public ::testing::Test {
 protected:
  void StartWithAgents(const std::string& name, int agents,
                       const std::vector<std::string>& flags = {}) {
    cluster_ = std::make_unique<Cluster>(name);
    ASSERT_TRUE(cluster_->StartDaemon(flags).ok());
    for (int i = 0; i < agents; ++i) {
      absl::StatusOr<std::string> id = cluster_->StartAgent("cpu");
      ASSERT_TRUE(id.ok()) << id.status();
      agent_ids_.push_back(*id);
    }
    absl::StatusOr<std::unique_ptr<client::KilnClient>> c = cluster_->Client();
    ASSERT_TRUE(c.ok()) << c.status();
    client_ = std::move(*c);
  }

  std::unique_ptr<Cluster> cluster_;
  std::vector<std::string> agent_ids_;
  std::unique_ptr<client::KilnClient> client_;
};

}  // namespace kiln::testing

#endif  // KILN_TESTS_CLUSTER_TEST_H_
