// Trusted execution end to end (issue 47): only code kilnd built — or signed for a client allowed
// to upload — runs on a device; an agent runs only what a key it trusts signed; a task child
// cannot reach the agent's token, the network or the agent's memory; a stored artifact's digest
// is never rewritten by another tenant. Real kilnd, kiln-worker and kiln-agent processes on
// loopback, with client and agent tokens.
//
// Arguments: kilnd, kiln-agent, kiln (the binaries under test).
#include <algorithm>
#include <cstring>
#include <vector>

#include "compiler/tune/database.h"
#include "runtime/artifact_signing.h"
#include "tests/service_test_util.h"

namespace kiln::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

// The library whose constructor probes what it can reach (testdata/probe_library.c).
constexpr char kProbeLibrary[] = "tests/libprobe_library.so";

class TrustedExecutionTest : public ServiceTest {
 protected:
  // kilnd with three clients — alice, bob, and an uploader allowed to upload — and an agent
  // token for device "cpu", and that agent started with its token file.
  void SetUp() override {
    dir_ = StartWithTokens(
        "trusted_" + std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()),
        "alice-secret name=alice\nbob-secret name=bob\n"
        "uploader-secret name=uploader upload=allow\n"
        "carol-secret name=carol keys=stranger\n",
        "agent-secret name=cpu-agent keys=cpu,stranger,both,liar-negative,liar-nan,liar-shape\n");
    std::ofstream(dir_ + "/agent.token") << "agent-secret\n";
    PrivateFile(dir_ + "/agent.token");
    absl::StatusOr<std::string> agent =
        cluster_->StartAgent("cpu", {"--token", dir_ + "/agent.token"});
    ASSERT_TRUE(agent.ok()) << agent.status();
    agent_id_ = *agent;
    alice_ = As("alice-secret");
    bob_ = As("bob-secret");
    uploader_ = As("uploader-secret");
    compiled_ = CompileOk(*alice_, CompileRequest(kMlp));
    absl::StatusOr<std::string> bytes = alice_->DownloadArtifact(compiled_.artifact_digest());
    ASSERT_TRUE(bytes.ok()) << bytes.status();
    signed_artifact_ = *bytes;
  }

  std::unique_ptr<client::KilnClient> As(const std::string& token) {
    runtime::ChannelOptions o;
    o.token = token;
    absl::StatusOr<std::unique_ptr<client::KilnClient>> c = cluster_->Client(o);
    EXPECT_TRUE(c.ok()) << c.status();
    return std::move(*c);
  }

  // Alice's artifact with its kernel library replaced by the probe, digested again and unsigned:
  // what a tenant builds on its own machine.
  std::string ProbeArtifact() {
    absl::StatusOr<v1::ArtifactProto> a = runtime::ParseArtifact(signed_artifact_, false);
    EXPECT_TRUE(a.ok()) << a.status();
    a->set_kernels(ReadFile(kProbeLibrary));
    EXPECT_GT(a->kernels().size(), 1000u);
    a->clear_signature();
    return runtime::SerializeArtifact(*a);
  }

  // An inference of the MLP's input by `artifact`'s bytes.
  absl::StatusOr<v1::Job> Infer(client::KilnClient& client, const std::string& artifact,
                                const std::string& function = "main") {
    v1::SubmitInferenceRequest request;
    request.mutable_artifact()->set_artifact(artifact);
    request.set_device_key("cpu");
    request.set_function(function);
    runtime::TensorToProto(Npy(kMlpInput), "", request.add_inputs());
    absl::StatusOr<v1::SubmitResponse> submitted = client.SubmitInference(request);
    if (!submitted.ok()) return submitted.status();
    return client.Wait(submitted->job().id());
  }

  absl::StatusOr<v1::Job> InferDigest(client::KilnClient& client, const std::string& digest,
                                      const std::string& device = "cpu") {
    v1::SubmitInferenceRequest request;
    request.mutable_artifact()->set_digest(digest);
    request.set_device_key(device);
    runtime::TensorToProto(Npy(kMlpInput), "", request.add_inputs());
    absl::StatusOr<v1::SubmitResponse> submitted = client.SubmitInference(request);
    if (!submitted.ok()) return submitted.status();
    return client.Wait(submitted->job().id());
  }

  std::string dir_, agent_id_;
  std::unique_ptr<client::KilnClient> alice_, bob_, uploader_;
  v1::Job compiled_;
  std::string signed_artifact_;
};

// Finding 1: client B sent its own .kiln bytes, whose library's constructor ran on A's board,
// read the agent's token and impersonated the board. Now kilnd refuses what it did not build; a
// client allowed to upload gets its library run confined: the constructor runs, and reaches
// neither the token, nor the network, nor the agent's memory.
TEST_F(TrustedExecutionTest, ForeignCodeNeverRunsAndAllowedUploadsReachNoSecrets) {
  const std::string probe = ProbeArtifact();
  absl::StatusOr<v1::Job> refused = Infer(*bob_, probe);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kPermissionDenied) << refused.status();
  EXPECT_THAT(refused.status().message(), HasSubstr("was not built by this service"));
  EXPECT_THAT(refused.status().message(), HasSubstr("not signed"));
  EXPECT_THAT(cluster_->agent(agent_id_).Log(), Not(HasSubstr("kiln-probe")));

  // Alice's own artifact, signed by kilnd, handed back as bytes: accepted, and it runs.
  absl::StatusOr<v1::Job> own = Infer(*alice_, signed_artifact_);
  ASSERT_TRUE(own.ok()) << own.status();
  EXPECT_EQ(own->state(), v1::JOB_STATE_SUCCEEDED) << own->reason();

  // The uploader may upload: the library is loaded in a confined child.
  absl::StatusOr<v1::Job> probed = Infer(*uploader_, probe);
  ASSERT_TRUE(probed.ok()) << probed.status();
  EXPECT_EQ(probed->state(), v1::JOB_STATE_FAILED);
  EXPECT_THAT(probed->reason(), HasSubstr("kiln-probe: token"));  // the constructor ran ...
  EXPECT_THAT(probed->reason(), HasSubstr("(named)"));            // ... found the token's path
  EXPECT_THAT(probed->reason(), Not(HasSubstr("REACHED")));       // ... and reached nothing
  EXPECT_THAT(probed->reason(), HasSubstr("socket Operation not permitted"));
  std::printf("the probe's report: %s\n", probed->reason().c_str());

  // The board is still the board: its token was not taken, alice's inference runs on it.
  absl::StatusOr<v1::Job> after = InferDigest(*alice_, compiled_.artifact_digest());
  ASSERT_TRUE(after.ok()) << after.status();
  EXPECT_EQ(after->state(), v1::JOB_STATE_SUCCEEDED) << after->reason();
}

// An agent loads only what a key it trusts signed: one configured with another key refuses
// kilnd's artifact before writing it anywhere; one that trusts both (a rotation) runs it.
TEST_F(TrustedExecutionTest, AnAgentRunsOnlyWhatItsTrustedKeysSigned) {
  absl::StatusOr<runtime::SigningKey> other = runtime::SigningKey::Generate();
  ASSERT_TRUE(other.ok());
  std::ofstream(dir_ + "/other.pub") << other->PublicKeyPem();
  std::ofstream(dir_ + "/both.pub")
      << other->PublicKeyPem() << ReadFile(Cluster::SigningKeyPath() + ".pub");
  ASSERT_TRUE(cluster_
                  ->StartAgent("stranger", {"--token", dir_ + "/agent.token", "--trusted-keys",
                                            dir_ + "/other.pub"})
                  .ok());
  ASSERT_TRUE(cluster_
                  ->StartAgent("both", {"--token", dir_ + "/agent.token", "--trusted-keys",
                                        dir_ + "/both.pub"})
                  .ok());
  absl::StatusOr<v1::Job> stranger = InferDigest(*alice_, compiled_.artifact_digest(), "stranger");
  ASSERT_TRUE(stranger.ok()) << stranger.status();
  EXPECT_EQ(stranger->state(), v1::JOB_STATE_FAILED);
  EXPECT_THAT(stranger->reason(), HasSubstr("refused: it is signed by key"));
  EXPECT_THAT(stranger->reason(), HasSubstr("which this process does not trust"));
  // Nowhere in an agent's cache (kilnd's store keeps its own copy).
  for (const auto& entry : std::filesystem::recursive_directory_iterator(dir_)) {
    if (entry.path().filename() == compiled_.artifact_digest() + ".kiln") {
      EXPECT_NE(entry.path().string().find("/store/"), std::string::npos) << entry.path();
    }
  }

  absl::StatusOr<v1::Job> both = InferDigest(*alice_, compiled_.artifact_digest(), "both");
  ASSERT_TRUE(both.ok()) << both.status();
  EXPECT_EQ(both->state(), v1::JOB_STATE_SUCCEEDED) << both->reason();
}

// Finding 2: a copy of alice's artifact with `main` renamed kept its digest, overwrote alice's
// file and broke her jobs. Now the digest covers the manifest: the edited copy is another
// artifact (and unsigned, refused unless the tenant may upload), and alice's bytes stay hers.
TEST_F(TrustedExecutionTest, AnotherTenantCannotRewriteAStoredArtifact) {
  absl::StatusOr<v1::ArtifactProto> copy = runtime::ParseArtifact(signed_artifact_, false);
  ASSERT_TRUE(copy.ok());
  copy->mutable_manifest()->mutable_functions(0)->set_name("renamed");
  // The edited manifest with the old digest and signature: corrupt.
  absl::StatusOr<v1::Job> same_digest = Infer(*uploader_, copy->SerializeAsString(), "renamed");
  ASSERT_FALSE(same_digest.ok());
  EXPECT_EQ(same_digest.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(same_digest.status().message(), HasSubstr("content digest"));
  // Digested again: a new artifact, with a new digest, stored beside alice's.
  copy->clear_signature();
  const std::string renamed = runtime::SerializeArtifact(*copy);
  EXPECT_EQ(Infer(*bob_, renamed, "renamed").status().code(), absl::StatusCode::kPermissionDenied);
  absl::StatusOr<v1::Job> uploaded = Infer(*uploader_, renamed, "renamed");
  ASSERT_TRUE(uploaded.ok()) << uploaded.status();
  // Broken for its uploader alone: the executable has no such function.
  EXPECT_EQ(uploaded->state(), v1::JOB_STATE_FAILED);
  EXPECT_THAT(uploaded->reason(), HasSubstr("no function 'renamed'"));
  absl::StatusOr<v1::ArtifactManifest> renamed_manifest = runtime::ReadArtifactManifest(renamed);
  ASSERT_TRUE(renamed_manifest.ok());
  EXPECT_NE(renamed_manifest->digest(), compiled_.artifact_digest());

  absl::StatusOr<std::string> alices = alice_->DownloadArtifact(compiled_.artifact_digest());
  ASSERT_TRUE(alices.ok()) << alices.status();
  EXPECT_EQ(*alices, signed_artifact_);
  absl::StatusOr<v1::Job> works = InferDigest(*alice_, compiled_.artifact_digest());
  ASSERT_TRUE(works.ok()) << works.status();
  EXPECT_EQ(works->state(), v1::JOB_STATE_SUCCEEDED) << works->reason();
}

// Devices per principal: carol's credential names the one device she may use; she sees only it,
// and another device answers as unknown, by key and by selector.
TEST_F(TrustedExecutionTest, AClientSeesAndUsesOnlyItsDevices) {
  ASSERT_TRUE(cluster_->StartAgent("stranger", {"--token", dir_ + "/agent.token"}).ok());
  std::unique_ptr<client::KilnClient> carol = As("carol-secret");
  absl::StatusOr<std::vector<v1::Device>> devices = carol->ListDevices();
  ASSERT_TRUE(devices.ok()) << devices.status();
  ASSERT_EQ(devices->size(), 1u);
  EXPECT_EQ((*devices)[0].key(), "stranger");
  EXPECT_EQ(alice_->ListDevices()->size(), 2u);  // alice's token names none: every device

  v1::Job mine = CompileOk(*carol, CompileRequest(kMlp));  // the cache's: now hers too
  absl::StatusOr<v1::Job> on_cpu = InferDigest(*carol, mine.artifact_digest(), "cpu");
  EXPECT_EQ(on_cpu.status().code(), absl::StatusCode::kNotFound) << on_cpu.status();
  EXPECT_THAT(on_cpu.status().message(), HasSubstr("unknown device key 'cpu'"));
  v1::SubmitInferenceRequest by_selector;
  by_selector.mutable_artifact()->set_digest(mine.artifact_digest());
  by_selector.set_device_selector("arch=x86_64,key=cpu");
  EXPECT_FALSE(carol->SubmitInference(by_selector).ok());
  absl::StatusOr<v1::Job> on_hers = InferDigest(*carol, mine.artifact_digest(), "stranger");
  ASSERT_TRUE(on_hers.ok()) << on_hers.status();
  EXPECT_EQ(on_hers->state(), v1::JOB_STATE_SUCCEEDED) << on_hers->reason();
}

// Finding 4: whoever held an agent token decided which record every tenant's compiles applied.
// A tenant's tune records are its own: the service's database keeps them under its name, and
// another tenant's compile of the same module applies none of them.
TEST_F(TrustedExecutionTest, ATenantsTuneRecordsAreItsOwn) {
  v1::SubmitTuneRequest tune;
  *tune.mutable_module() = *client::ModuleSourceFromFile(kMlp);
  tune.set_device_key("cpu");
  tune.set_trials(4);
  absl::StatusOr<v1::SubmitResponse> submitted = alice_->SubmitTune(tune);
  ASSERT_TRUE(submitted.ok()) << submitted.status();
  absl::StatusOr<v1::Job> tuned = alice_->Wait(submitted->job().id());
  ASSERT_TRUE(tuned.ok()) << tuned.status();
  ASSERT_EQ(tuned->state(), v1::JOB_STATE_SUCCEEDED) << tuned->reason();

  absl::StatusOr<std::unique_ptr<tune::TuningDatabase>> db =
      tune::TuningDatabase::Open(dir_ + "/store/tuning.db");
  ASSERT_TRUE(db.ok()) << db.status();
  absl::StatusOr<std::vector<tune::WorkloadId>> workloads = (*db)->Workloads();
  ASSERT_TRUE(workloads.ok() && !workloads->empty());
  size_t alices = 0;
  for (const tune::WorkloadId& w : *workloads) {
    EXPECT_TRUE((*db)->Records(w)->empty()) << "a record was published";  // the published view
    (*db)->set_owner("alice");
    alices += (*db)->Records(w)->size();
    (*db)->set_owner("");
  }
  EXPECT_GT(alices, 0u);

  v1::Job bobs = CompileOk(*bob_, CompileRequest(kMlp));
  absl::StatusOr<std::string> bytes = bob_->DownloadArtifact(bobs.artifact_digest());
  ASSERT_TRUE(bytes.ok()) << bytes.status();
  absl::StatusOr<v1::ArtifactManifest> manifest = runtime::ReadArtifactManifest(*bytes);
  ASSERT_TRUE(manifest.ok());
  EXPECT_EQ(manifest->tuned_kernels_size(), 0);

  // An operator publishes alice's records, out of kilnd's sight (`kiln tuning-records publish`
  // on the database; the untuned kernels measured slow, so that every record applies): bob's
  // same request is no longer answered from kilnd's memory of it, but applies them.
  ASSERT_TRUE((*db)->Publish("alice").ok());
  for (const tune::WorkloadId& w : *workloads) ASSERT_TRUE((*db)->SetDefaultSeconds(w, 1.0).ok());
  v1::Job republished = CompileOk(*bob_, CompileRequest(kMlp));
  EXPECT_NE(republished.artifact_digest(), bobs.artifact_digest());
  bytes = bob_->DownloadArtifact(republished.artifact_digest());
  ASSERT_TRUE(bytes.ok()) << bytes.status();
  manifest = runtime::ReadArtifactManifest(*bytes);
  ASSERT_TRUE(manifest.ok());
  EXPECT_GT(manifest->tuned_kernels_size(), 0);
}

// Finding 4 again: a record is checked in kiln-worker, not on the agent's word. For a target
// kilnd's machine cannot run, and no kiln-agent named to check it under an emulator
// (--candidate-checker), the tune is refused rather than run on the agents' word.
TEST_F(TrustedExecutionTest, ATuneKilndCannotCheckIsRefused) {
  v1::SubmitTuneRequest tune;
  *tune.mutable_module() = *client::ModuleSourceFromFile(kMlp);
  tune.set_device_key("cpu");
  tune.set_target("llvm -mtriple=aarch64-linux-gnu -mattr=+neon");
  tune.set_trials(4);
  absl::StatusOr<v1::SubmitResponse> submitted = alice_->SubmitTune(tune);
  ASSERT_TRUE(submitted.ok()) << submitted.status();
  absl::StatusOr<v1::Job> tuned = alice_->Wait(submitted->job().id());
  ASSERT_TRUE(tuned.ok()) << tuned.status();
  EXPECT_EQ(tuned->state(), v1::JOB_STATE_FAILED);
  EXPECT_THAT(tuned->reason(), HasSubstr("cannot check tuning candidates for aarch64"));
  EXPECT_THAT(tuned->reason(), HasSubstr("--candidate-checker aarch64="));
}

// Findings 4 and 6 from a board that lies (kiln-agent built with a test hook: KILN_AGENT_LIES):
// −1 s for every tuning candidate was a record every tenant's compiles applied; NaN profile
// times and outputs whose shape contradicted the artifact were stored as SUCCEEDED. Each answer
// is refused now, and the job says why.
TEST_F(TrustedExecutionTest, AHostileBoardsAnswersAreRefused) {
  auto start_liar = [&](const std::string& lie) {
    setenv("KILN_AGENT_LIES", lie.c_str(), 1);
    absl::StatusOr<std::string> id = cluster_->StartAgentCommand(
        {"runtime/agent/kiln-agent-test-hooks"}, "liar-" + lie, {"--token", dir_ + "/agent.token"});
    unsetenv("KILN_AGENT_LIES");
    ASSERT_TRUE(id.ok()) << id.status();
  };
  start_liar("negative");
  start_liar("nan");
  start_liar("shape");

  v1::SubmitTuneRequest tune;
  *tune.mutable_module() = *client::ModuleSourceFromFile(kMlp);
  tune.set_device_key("liar-negative");
  tune.set_trials(4);
  absl::StatusOr<v1::SubmitResponse> submitted = alice_->SubmitTune(tune);
  ASSERT_TRUE(submitted.ok()) << submitted.status();
  absl::StatusOr<v1::Job> tuned = alice_->Wait(submitted->job().id());
  ASSERT_TRUE(tuned.ok()) << tuned.status();
  ASSERT_GT(tuned->tune().tasks_size(), 0);
  for (const v1::TuneTaskResult& t : tuned->tune().tasks()) {
    EXPECT_EQ(t.best_seconds(), 0) << t.name();  // nothing measured counts
    EXPECT_THAT(t.error(), HasSubstr("is not a positive number of seconds")) << t.name();
  }
  v1::SubmitProfileRequest profile;
  profile.mutable_artifact()->set_digest(compiled_.artifact_digest());
  profile.set_device_key("liar-nan");
  absl::StatusOr<v1::SubmitResponse> profiled = alice_->SubmitProfile(profile);
  ASSERT_TRUE(profiled.ok()) << profiled.status();
  absl::StatusOr<v1::Job> timed = alice_->Wait(profiled->job().id());
  ASSERT_TRUE(timed.ok()) << timed.status();
  EXPECT_EQ(timed->state(), v1::JOB_STATE_FAILED);
  EXPECT_THAT(timed->reason(), HasSubstr("refused its result"));
  EXPECT_THAT(timed->reason(), HasSubstr("nan"));

  absl::StatusOr<v1::Job> inferred =
      InferDigest(*alice_, compiled_.artifact_digest(), "liar-shape");
  ASSERT_TRUE(inferred.ok()) << inferred.status();
  EXPECT_EQ(inferred->state(), v1::JOB_STATE_FAILED);
  EXPECT_THAT(inferred->reason(), HasSubstr("the artifact's signature says"));
}

// Finding 5: outputs came back with every listing (ListJobs failed with RESOURCE_EXHAUSTED
// once they were large), and a profile's cool-down held a shared device as long as a client
// asked. A listing names outputs without their data; GetJob has it; the profile's minimum
// repeat time and cool-down are bounded by the server.
TEST_F(TrustedExecutionTest, ListingsCarryNoOutputsAndProfilesAreBounded) {
  absl::StatusOr<v1::Job> inferred = InferDigest(*alice_, compiled_.artifact_digest());
  ASSERT_TRUE(inferred.ok()) << inferred.status();
  ASSERT_EQ(inferred->state(), v1::JOB_STATE_SUCCEEDED) << inferred->reason();
  ASSERT_EQ(inferred->inference().outputs_size(), 1);
  EXPECT_EQ(inferred->inference().outputs(0).data().size(), 4u * 8 * 4);  // GetJob: the data
  absl::StatusOr<std::vector<v1::Job>> listed = alice_->ListJobs();
  ASSERT_TRUE(listed.ok()) << listed.status();
  bool found = false;
  for (const v1::Job& j : *listed) {
    if (j.id() != inferred->id()) continue;
    found = true;
    ASSERT_EQ(j.inference().outputs_size(), 1);
    EXPECT_EQ(j.inference().outputs(0).shape_size(), 2);
    EXPECT_TRUE(j.inference().outputs(0).data().empty());
  }
  EXPECT_TRUE(found);
  // The paged download: the same outputs, byte for byte; another tenant's job answers as absent.
  absl::StatusOr<std::vector<v1::TensorValue>> paged = alice_->DownloadOutputs(inferred->id());
  ASSERT_TRUE(paged.ok()) << paged.status();
  ASSERT_EQ(paged->size(), 1u);
  EXPECT_EQ((*paged)[0].SerializeAsString(), inferred->inference().outputs(0).SerializeAsString());
  EXPECT_EQ(bob_->DownloadOutputs(inferred->id()).status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(alice_->DownloadOutputs(compiled_.id()).status().code(),
            absl::StatusCode::kFailedPrecondition);

  // Outputs over 1 MiB in all never travel with a job (GetJob, its events): they are named,
  // and streamed by DownloadOutputs. relu((x + bias) / 2) of shape (4096, 8, 16): 2 MiB.
  v1::Job broadcast =
      CompileOk(*alice_, CompileRequest("compiler/script/testdata/relax_broadcast.py"));
  std::vector<float> x(4096 * 16), bias(8);
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(i % 97) - 48;
  for (size_t i = 0; i < bias.size(); ++i) bias[i] = static_cast<float>(i) * 3 - 10;
  v1::SubmitInferenceRequest big;
  big.mutable_artifact()->set_digest(broadcast.artifact_digest());
  big.set_device_key("cpu");
  auto add_input = [&big](const char* name, const std::vector<float>& data,
                          std::vector<int64_t> shape) {
    v1::TensorValue* t = big.add_inputs();
    t->set_name(name);
    t->set_dtype("float32");
    for (int64_t d : shape) t->add_shape(d);
    t->set_data(data.data(), data.size() * sizeof(float));
  };
  add_input("x", x, {4096, 1, 16});
  add_input("bias", bias, {8, 1});
  absl::StatusOr<v1::SubmitResponse> submitted = alice_->SubmitInference(big);
  ASSERT_TRUE(submitted.ok()) << submitted.status();
  absl::StatusOr<v1::Job> large = alice_->Wait(submitted->job().id());
  ASSERT_TRUE(large.ok()) << large.status();
  ASSERT_EQ(large->state(), v1::JOB_STATE_SUCCEEDED) << large->reason();
  EXPECT_TRUE(large->inference().data_elsewhere());
  ASSERT_EQ(large->inference().outputs_size(), 1);
  EXPECT_TRUE(large->inference().outputs(0).data().empty());
  EXPECT_EQ(large->inference().outputs(0).shape_size(), 3);
  absl::StatusOr<std::vector<v1::TensorValue>> streamed = alice_->DownloadOutputs(large->id());
  ASSERT_TRUE(streamed.ok()) << streamed.status();
  ASSERT_EQ(streamed->size(), 1u);
  const std::string& y = (*streamed)[0].data();
  ASSERT_EQ(y.size(), 4096u * 8 * 16 * sizeof(float));
  int wrong = 0;
  for (size_t b = 0; b < 4096; ++b) {
    for (size_t c = 0; c < 8; ++c) {
      for (size_t k = 0; k < 16; ++k) {
        float want = std::max(0.0f, (x[b * 16 + k] + bias[c]) / 2), got;
        std::memcpy(&got, y.data() + ((b * 8 + c) * 16 + k) * sizeof(float), sizeof(float));
        wrong += got != want;
      }
    }
  }
  EXPECT_EQ(wrong, 0);

  v1::SubmitProfileRequest profile;
  profile.mutable_artifact()->set_digest(compiled_.artifact_digest());
  profile.set_device_key("cpu");
  profile.mutable_options()->set_cooldown_ms(60000);
  absl::Status held = alice_->SubmitProfile(profile).status();
  EXPECT_EQ(held.code(), absl::StatusCode::kInvalidArgument) << held;
  EXPECT_THAT(held.message(), HasSubstr("--max-cooldown-ms"));
}

// Finding 5: evicted artifacts left their jobs saying SUCCEEDED with nothing behind them, and
// one tenant's work evicted another's. Here the cache holds about one MobileNetV2: bob's compile
// cannot evict alice's artifact (the cache stays over its bound); alice's own next compile
// evicts it, and her job says so.
TEST_F(ServiceTest, EvictionSparesOtherTenantsAndAJobSaysWhenItsArtifactIsGone) {
  std::string dir = StartWithTokens("eviction", "alice-secret name=alice\nbob-secret name=bob\n",
                                    "", {"--cache-max-mb", "20"});
  auto as = [&](const char* token) {
    runtime::ChannelOptions o;
    o.token = token;
    return std::move(*cluster_->Client(o));
  };
  std::unique_ptr<client::KilnClient> alice = as("alice-secret"), bob = as("bob-secret");
  v1::Job big = CompileOk(*alice, CompileRequest(kBig));  // 14 MB
  v1::SubmitCompileRequest big_for_avx2 = CompileRequest(kBig);
  big_for_avx2.set_target("llvm -mcpu=haswell");
  v1::Job bobs = CompileOk(*bob, big_for_avx2);  // another 14 MB: over the bound
  EXPECT_TRUE(alice->DownloadArtifact(big.artifact_digest()).ok());
  EXPECT_FALSE(alice->GetJob(big.id())->artifact_evicted());
  // Alice's own next artifact may push hers out (bob's stays: his).
  v1::SubmitCompileRequest big_for_arm = CompileRequest(kBig);
  big_for_arm.set_target("llvm -mtriple=aarch64-linux-gnu -mcpu=cortex-a72");
  CompileOk(*alice, big_for_arm);
  absl::StatusOr<v1::Job> gone = alice->GetJob(big.id());
  ASSERT_TRUE(gone.ok()) << gone.status();
  EXPECT_TRUE(gone->artifact_evicted());
  EXPECT_TRUE(bob->DownloadArtifact(bobs.artifact_digest()).ok());
  EXPECT_FALSE(bob->GetJob(bobs.id())->artifact_evicted());
}

}  // namespace
}  // namespace kiln::testing
