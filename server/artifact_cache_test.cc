// The artifact cache over a real store: keys, candidates, hits by structural equality (as
// kiln-worker decides them), LRU eviction and corruption.
#include "server/artifact_cache.h"

#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "compiler/backend/build.h"
#include "compiler/frontend/load_module.h"
#include "compiler/version.h"
#include "compiler/wire/ir_proto.h"
#include "gtest/gtest.h"
#include "runtime/artifact.h"
#include "runtime/format/artifact.pb.h"
#include "server/worker/cache_key.h"

namespace kiln::server {
namespace {

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

ir::IRModule Import(const std::string& path) {
  absl::StatusOr<frontend::SourceForm> form = frontend::FormFromPath(path);
  EXPECT_TRUE(form.ok()) << form.status();
  absl::StatusOr<ir::IRModule> mod = frontend::LoadModule(*form, ReadFile(path), path);
  EXPECT_TRUE(mod.ok()) << mod.status();
  return *mod;
}

std::string StoreDir(const std::string& name) {
  return std::string(getenv("TEST_TMPDIR")) + "/" + name;
}

// Compiles `mod` and inserts it; returns the digest.
std::string CompileInto(ArtifactCache& cache, const ir::IRModule& mod, const std::string& key) {
  absl::StatusOr<std::string> artifact = backend::BuildArtifact(mod, "llvm");
  EXPECT_TRUE(artifact.ok()) << artifact.status();
  v1::ArtifactProto parsed;
  parsed.ParseFromString(*artifact);
  std::string digest = parsed.manifest().digest();
  EXPECT_TRUE(cache.Insert(key, digest, *artifact, wire::SerializeModule(mod)).ok());
  return digest;
}

class CacheTest : public ::testing::TestWithParam<const char*> {};

TEST_P(CacheTest, TheSameModuleImportedTwiceHasOneKeyAndHits) {
  ir::IRModule a = Import(GetParam());
  ir::IRModule b = Import(GetParam());
  EXPECT_EQ(CacheKey(a, "llvm", {}), CacheKey(b, "llvm", {}));
  // Through the wire form the store keeps, too.
  absl::StatusOr<ir::IRModule> round = wire::DeserializeModule(wire::SerializeModule(a));
  ASSERT_TRUE(round.ok()) << round.status();
  EXPECT_EQ(CacheKey(*round, "llvm", {}), CacheKey(b, "llvm", {}));

  auto store = Store::Open(StoreDir(std::string("hit_") + std::to_string(rand())));
  ASSERT_TRUE(store.ok());
  ArtifactCache cache(store->get(), 1 << 30);
  std::string key = CacheKey(a, "llvm", {});
  std::string digest = CompileInto(cache, a, key);
  absl::StatusOr<CacheCandidates> candidates = cache.Candidates(key);
  ASSERT_TRUE(candidates.ok()) << candidates.status();
  ASSERT_EQ(candidates->candidates_size(), 1);
  const CachedModule* hit = FindStructuralMatch(b, *candidates);
  ASSERT_NE(hit, nullptr);
  EXPECT_EQ(hit->digest(), digest);
  EXPECT_GT(hit->size(), 0);
  EXPECT_TRUE(cache.Candidates("another key")->candidates().empty());
}

INSTANTIATE_TEST_SUITE_P(Models, CacheTest,
                         ::testing::Values("compiler/script/testdata/tvm_mlp.py",
                                           "tests/models/tiny_resnet.onnx"));

TEST(ArtifactCache, KeysDifferByTargetAndOptions) {
  ir::IRModule mlp = Import("compiler/script/testdata/tvm_mlp.py");
  v1::CompileOptions unfused;
  unfused.set_no_fuse(true);
  EXPECT_NE(CacheKey(mlp, "llvm", {}), CacheKey(mlp, "llvm -mtriple=aarch64-linux-gnu", {}));
  EXPECT_NE(CacheKey(mlp, "llvm", {}), CacheKey(mlp, "llvm", unfused));
  // Tuning records applied are part of the key; other records are another key.
  EXPECT_NE(CacheKey(mlp, "llvm", {}), CacheKey(mlp, "llvm", {}, "records-a"));
  EXPECT_NE(CacheKey(mlp, "llvm", {}, "records-a"), CacheKey(mlp, "llvm", {}, "records-b"));
}

TEST(ArtifactCache, AnotherCompilerIdentityTurnsAHitIntoAMiss) {
  // The identity follows the build: the release version and a digest of the compiler's sources.
  EXPECT_TRUE(absl::StartsWith(CompilerIdentity(), absl::StrCat(kCompilerVersion, "+")));
  EXPECT_EQ(std::string(CompilerIdentity()).size(), std::string(kCompilerVersion).size() + 13);
  auto store = Store::Open(StoreDir("identity"));
  ASSERT_TRUE(store.ok());
  ArtifactCache cache(store->get(), 1 << 30);
  ir::IRModule mlp = Import("compiler/script/testdata/tvm_mlp.py");
  std::string key = CacheKey(mlp, "llvm", {});
  CompileInto(cache, mlp, key);
  ASSERT_EQ(cache.Candidates(key)->candidates_size(), 1);  // this build: a hit
  // The same module, target and options under the next compiler: another key, no candidate.
  std::string upgraded = CacheKey(mlp, "llvm", {}, "", "0.1.0+000000000000");
  EXPECT_NE(upgraded, key);
  EXPECT_EQ(cache.Candidates(upgraded)->candidates_size(), 0);
}

TEST(ArtifactCache, AKeyCollisionWithADifferentModuleIsAMiss) {
  auto store = Store::Open(StoreDir("collision"));
  ASSERT_TRUE(store.ok());
  ArtifactCache cache(store->get(), 1 << 30);
  ir::IRModule mlp = Import("compiler/script/testdata/tvm_mlp.py");
  ir::IRModule cnn = Import("tests/models/tiny_resnet.onnx");
  std::string key = CacheKey(mlp, "llvm", {});
  CompileInto(cache, mlp, key);
  // Pretend the CNN hashed to the MLP's key: structural equality still refuses it.
  absl::StatusOr<CacheCandidates> candidates = cache.Candidates(key);
  ASSERT_TRUE(candidates.ok());
  ASSERT_EQ(candidates->candidates_size(), 1);
  EXPECT_EQ(FindStructuralMatch(cnn, *candidates), nullptr);
  EXPECT_NE(FindStructuralMatch(mlp, *candidates), nullptr);
}

// Two artifacts (the MLP's and the tiny ResNet's), built once for the tests that evict.
struct TwoArtifacts {
  std::string a, b;                // bytes
  std::string digest_a, digest_b;  // content digests
  int64_t larger = 0;              // the larger one's size
};
const TwoArtifacts& BuildTwo() {
  static const TwoArtifacts* two = [] {
    auto* t = new TwoArtifacts();
    t->a = *backend::BuildArtifact(Import("compiler/script/testdata/tvm_mlp.py"), "llvm");
    t->b = *backend::BuildArtifact(Import("tests/models/tiny_resnet.onnx"), "llvm");
    t->digest_a = runtime::ReadArtifactManifest(t->a)->digest();
    t->digest_b = runtime::ReadArtifactManifest(t->b)->digest();
    t->larger = static_cast<int64_t>(std::max(t->a.size(), t->b.size()));
    return t;
  }();
  return *two;
}

TEST(ArtifactCache, EvictsTheLeastRecentlyUsedToStayInBounds) {
  auto store = Store::Open(StoreDir("lru"));
  ASSERT_TRUE(store.ok());
  const TwoArtifacts& two = BuildTwo();
  ArtifactCache cache(store->get(), two.larger);  // room for the larger of the two only
  ASSERT_TRUE(cache.Insert("ka", two.digest_a, two.a, "").ok());
  ASSERT_TRUE(cache.Insert("kb", two.digest_b, two.b, "").ok());
  EXPECT_EQ(cache.evictions(), 1);
  EXPECT_EQ((*store)->ReadArtifact(two.digest_a).status().code(), absl::StatusCode::kNotFound);
  EXPECT_TRUE((*store)->ReadArtifact(two.digest_b).ok());
}

// Issue 47, finding 5: one tenant's uploads evicted other tenants' artifacts. What bob's insert
// evicts is never an artifact a job of another tenant refers to: the cache stays over its bound
// instead, and bob's own older artifact goes first.
TEST(ArtifactCache, ATenantsWorkNeverEvictsAnothersArtifact) {
  auto store = Store::Open(StoreDir("tenants"));
  ASSERT_TRUE(store.ok());
  const TwoArtifacts& two = BuildTwo();
  const std::string& alices = two.digest_a;
  const std::string& bobs = two.digest_b;
  ArtifactCache cache(store->get(), two.larger);
  std::map<std::string, std::string> referred_by = {{alices, "alice"}};
  cache.SetReferences([&](const std::string& digest, const std::string& tenant) {
    auto it = referred_by.find(digest);
    return it != referred_by.end() && it->second != tenant;
  });
  ASSERT_TRUE(cache.Insert("ka", alices, two.a, "", "alice").ok());
  ASSERT_TRUE(cache.Insert("kb", bobs, two.b, "", "bob").ok());
  EXPECT_EQ(cache.evictions(), 0);  // over the bound rather than alice's artifact
  EXPECT_TRUE((*store)->ReadArtifact(alices).ok());
  // Alice's own work may evict what only she refers to.
  referred_by[bobs] = "bob";
  referred_by.erase(alices);
  ASSERT_TRUE(cache.Insert("ka", alices, two.a, "", "alice").ok());
  EXPECT_EQ(cache.evictions(), 0);  // bob's is bob's
  referred_by.erase(bobs);
  ASSERT_TRUE(cache.Insert("ka", alices, two.a, "", "alice").ok());
  EXPECT_EQ(cache.evictions(), 1);
}

TEST(ArtifactCache, ACorruptArtifactIsNoCandidate) {
  auto store = Store::Open(StoreDir("corrupt"));
  ASSERT_TRUE(store.ok());
  ArtifactCache cache(store->get(), 1 << 30);
  ir::IRModule mlp = Import("compiler/script/testdata/tvm_mlp.py");
  std::string key = CacheKey(mlp, "llvm", {});
  std::string digest = CompileInto(cache, mlp, key);
  ASSERT_EQ(cache.Candidates(key)->candidates_size(), 1);
  {
    std::fstream f((*store)->ArtifactPath(digest), std::ios::in | std::ios::out | std::ios::binary);
    f.seekg(-100, std::ios::end);  // in the kernel library
    std::streamoff at = f.tellg();
    char c = static_cast<char>(f.get());
    f.seekp(at);
    f.put(static_cast<char>(c ^ 0x55));
  }
  // A file system's clock may not tick between the check above and the corruption; the cache
  // re-verifies on a changed size or mtime, which a later corruption has.
  std::string path = (*store)->ArtifactPath(digest);
  std::filesystem::last_write_time(
      path, std::filesystem::last_write_time(path) + std::chrono::seconds(1));
  EXPECT_EQ(cache.Candidates(key)->candidates_size(), 0);
}

}  // namespace
}  // namespace kiln::server
