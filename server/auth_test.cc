// Token files: principals, roles, and the errors a bad file gets.
#include "server/auth.h"

#include <cstdlib>
#include <fstream>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace kiln::server {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

std::string Write(const std::string& name, const std::string& text) {
  std::string path = std::string(std::getenv("TEST_TMPDIR")) + "/" + name;
  std::ofstream(path) << text;
  return path;
}

TEST(AuthTest, TokensNamePrincipalsAndRoles) {
  absl::StatusOr<std::map<std::string, Principal>> tokens =
      ReadTokens(Write("ok.tokens",
                       "# a comment\n\nalice-secret name=alice\n  ops-secret role=admin name=ops \n"
                       "anonymous-secret\n"));
  ASSERT_TRUE(tokens.ok()) << tokens.status();
  ASSERT_EQ(tokens->size(), 3u);
  EXPECT_EQ(tokens->at("alice-secret").name, "alice");
  EXPECT_FALSE(tokens->at("alice-secret").admin);
  EXPECT_EQ(tokens->at("ops-secret").name, "ops");
  EXPECT_TRUE(tokens->at("ops-secret").admin);
  // A token without a name is known by a digest of itself, never by the secret.
  EXPECT_THAT(tokens->at("anonymous-secret").name, StartsWith("token:"));
  EXPECT_EQ(tokens->at("anonymous-secret").name.find("anonymous"), std::string::npos);
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
