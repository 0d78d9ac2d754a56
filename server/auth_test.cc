// Token files: principals, roles, and the errors a bad file gets.
#include "server/auth.h"

#include <sys/stat.h>

#include <cstdlib>
#include <fstream>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace kiln::server {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

std::string Write(const std::string& name, const std::string& text, mode_t mode = 0600) {
  std::string path = std::string(std::getenv("TEST_TMPDIR")) + "/" + name;
  std::ofstream(path) << text;
  chmod(path.c_str(), mode);
  return path;
}

TEST(AuthTest, TokensNamePrincipalsAndRoles) {
  absl::StatusOr<std::map<std::string, Principal>> tokens =
      ReadTokens(Write("ok.tokens",
                       "# a comment\n\nalice-secret name=alice\n  ops-secret role=admin name=ops \n"
                       "anonymous-secret\n"));
  ASSERT_TRUE(tokens.ok()) << tokens.status();
  ASSERT_EQ(tokens->size(), 3u);
  // Kept by digest: the secrets themselves are not in kilnd's memory as keys.
  EXPECT_EQ(tokens->count("alice-secret"), 0u);
  const Principal& alice = tokens->at(TokenDigest("alice-secret"));
  EXPECT_EQ(alice.name, "alice");
  EXPECT_FALSE(alice.admin);
  EXPECT_EQ(tokens->at(TokenDigest("ops-secret")).name, "ops");
  EXPECT_TRUE(tokens->at(TokenDigest("ops-secret")).admin);
  // A token without a name is known by a digest of itself, never by the secret.
  const Principal& anonymous = tokens->at(TokenDigest("anonymous-secret"));
  EXPECT_THAT(anonymous.name, StartsWith("token:"));
  EXPECT_EQ(anonymous.name.find("anonymous"), std::string::npos);
}

TEST(AuthTest, AgentTokensNameTheDeviceKeysTheyMayServe) {
  absl::StatusOr<std::map<std::string, Principal>> tokens =
      ReadTokens(Write("agents.tokens",
                       "b1-secret name=b1 keys=board1\nany-secret name=any\n"
                       "two-secret keys=board1,board2\n"));
  ASSERT_TRUE(tokens.ok()) << tokens.status();
  const Principal& b1 = tokens->at(TokenDigest("b1-secret"));
  EXPECT_TRUE(b1.MayServe("board1"));
  EXPECT_FALSE(b1.MayServe("board2"));
  EXPECT_TRUE(tokens->at(TokenDigest("two-secret")).MayServe("board2"));
  EXPECT_TRUE(tokens->at(TokenDigest("any-secret")).MayServe("anything"));
}

// Under mutual TLS, agents by certificate subject, each with its keys.
TEST(AuthTest, AgentCertificatesNameTheirDeviceKeys) {
  absl::StatusOr<std::map<std::string, Principal>> certs =
      ReadAgentCerts(Write("agent.certs", "# boards\npi-1 keys=board1\njetson keys=a,b\n"));
  ASSERT_TRUE(certs.ok()) << certs.status();
  EXPECT_EQ(certs->at("pi-1").name, "cert:pi-1");
  EXPECT_TRUE(certs->at("pi-1").MayServe("board1"));
  EXPECT_FALSE(certs->at("pi-1").MayServe("a"));
  EXPECT_TRUE(certs->at("jetson").MayServe("b"));
  EXPECT_THAT(ReadAgentCerts(Write("bad.certs", "pi-1\n")).status().message(),
              HasSubstr("bad.certs:1: expected 'CN keys=K1,K2'"));
}

// A token file other users may read is refused, or accepted with a warning when allowed.
TEST(AuthTest, TokenFilesReadableByOthersAreRefused) {
  std::string shared = Write("shared.tokens", "a-secret\n", 0644);
  absl::StatusOr<std::map<std::string, Principal>> refused = ReadTokens(shared);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(refused.status().message(), HasSubstr("readable by other users (mode 644)"));
  std::string warning;
  EXPECT_TRUE(ReadTokens(shared, /*allow_shared_file=*/true, &warning).ok());
  EXPECT_THAT(warning, HasSubstr("chmod 600"));
}

TEST(AuthTest, BadTokenFilesAreRefusedWithTheLine) {
  absl::StatusOr<std::map<std::string, Principal>> unknown =
      ReadTokens(Write("unknown.tokens", "a-secret\nb-secret role=root\n"));
  ASSERT_FALSE(unknown.ok());
  EXPECT_THAT(unknown.status().message(), HasSubstr("unknown.tokens:2: unknown field 'role=root'"));
  absl::StatusOr<std::map<std::string, Principal>> repeated =
      ReadTokens(Write("repeated.tokens", "a-secret\na-secret name=a\n"));
  ASSERT_FALSE(repeated.ok());
  EXPECT_THAT(repeated.status().message(), HasSubstr("repeated.tokens:2: a repeated token"));
  EXPECT_THAT(ReadTokens(Write("empty.tokens", "# nothing\n")).status().message(),
              HasSubstr("no tokens"));
  EXPECT_EQ(ReadTokens("/nonexistent/file").status().code(), absl::StatusCode::kNotFound);
}

}  // namespace
}  // namespace kiln::server
