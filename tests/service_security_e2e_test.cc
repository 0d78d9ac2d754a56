// The service's trust boundaries end to end on loopback: jobs and artifacts that belong to whoever
// submitted them, agents that serve only their device keys, token files reloaded on SIGHUP, and
// tokens and mutual TLS with certificates made by openssl. Real kilnd, kiln-worker and
// kiln-agent processes.
//
// Arguments: kilnd, kiln-agent, kiln (the binaries under test).
#include <httplib.h>

#include "tests/service_test_util.h"

namespace kiln::testing {
namespace {

using ::testing::HasSubstr;

TEST_F(ServiceTest, JobsAndArtifactsBelongToWhoeverSubmittedThem) {
  std::string dir = StartWithTokens(
      "owners",
      "# clients\nalice-secret name=alice\nbob-secret name=bob\nops-secret name=ops role=admin\n",
      "agent-secret\n");
  std::ofstream(dir + "/agent.token") << "agent-secret\n";
  PrivateFile(dir + "/agent.token");
  ASSERT_TRUE(cluster_->StartAgent("cpu", {"--token", dir + "/agent.token"}).ok());
  auto as = [&](const char* token) {
    runtime::ChannelOptions o;
    o.token = token;
    absl::StatusOr<std::unique_ptr<client::KilnClient>> c = cluster_->Client(o);
    EXPECT_TRUE(c.ok());
    return std::move(*c);
  };
  std::unique_ptr<client::KilnClient> alice = as("alice-secret"), bob = as("bob-secret"),
                                      ops = as("ops-secret");
  v1::Job compiled = CompileOk(*alice, CompileRequest(kMlp));
  EXPECT_EQ(compiled.client(), "alice");
  // A queued job to cancel: a profile of alice's artifact with a long run.
  v1::SubmitProfileRequest profile;
  profile.mutable_artifact()->set_digest(compiled.artifact_digest());
  profile.set_device_key("cpu");
  profile.mutable_options()->set_repeat(1000);
  profile.mutable_options()->set_min_repeat_ms(100);
  absl::StatusOr<v1::SubmitResponse> running = alice->SubmitProfile(profile);
  ASSERT_TRUE(running.ok()) << running.status();
  std::string id = running->job().id();

  // Bob gets NOT_FOUND for every RPC on alice's job and artifact, as for ones that do not exist.
  auto not_found = [](const absl::Status& s) {
    EXPECT_EQ(s.code(), absl::StatusCode::kNotFound) << s;
  };
  not_found(bob->GetJob(id).status());
  not_found(bob->GetJob(compiled.id()).status());
  not_found(bob->Wait(id).status());
  not_found(bob->Cancel(id, "bob was here").status());
  not_found(bob->DownloadArtifact(compiled.artifact_digest()).status());
  not_found(bob->SubmitProfile(profile).status());
  v1::SubmitInferenceRequest infer;
  infer.mutable_artifact()->set_digest(compiled.artifact_digest());
  infer.set_device_key("cpu");
  not_found(bob->SubmitInference(infer).status());
  EXPECT_EQ(bob->GetJob(id).status().message(), absl::StrCat("no job '", id, "'"));
  not_found(bob->GetJob("job-nonexistent").status());
  absl::StatusOr<std::vector<v1::Job>> bobs = bob->ListJobs();
  ASSERT_TRUE(bobs.ok());
  EXPECT_TRUE(bobs->empty());
  // Alice still sees and owns both.
  EXPECT_EQ(alice->ListJobs()->size(), 2u);
  EXPECT_TRUE(alice->GetJob(id).ok());

  // The admin sees everyone's jobs and cancels alice's.
  EXPECT_EQ(ops->ListJobs()->size(), 2u);
  absl::StatusOr<v1::Job> cancelled = ops->Cancel(id, "maintenance");
  ASSERT_TRUE(cancelled.ok()) << cancelled.status();
  EXPECT_EQ(cancelled->state(), v1::JOB_STATE_CANCELLED);
  EXPECT_TRUE(ops->DownloadArtifact(compiled.artifact_digest()).ok());

  // Bob compiles the same module: a cache hit, and now the artifact is his to download too.
  v1::Job bobs_compile = CompileOk(*bob, CompileRequest(kMlp));
  EXPECT_TRUE(bobs_compile.cache_hit());
  EXPECT_EQ(bobs_compile.artifact_digest(), compiled.artifact_digest());
  EXPECT_TRUE(bob->DownloadArtifact(compiled.artifact_digest()).ok());
  EXPECT_EQ(bob->ListJobs()->size(), 1u);
}

// An agent credential serves only the device keys its token names; results count only from the
// session that was given the task; artifacts go only to the session running their task; and no
// string field of a request may be megabytes long. Each hole was open before issue 30: a process
// with any agent token registered as `board1`, fetched any artifact by digest, and a 4 MB module
// name was stored.
TEST_F(ServiceTest, AgentsServeOnlyTheirKeysAndSeeOnlyTheirTasks) {
  std::string dir = StartWithTokens("device_trust", "alice-secret name=alice\n",
                                    "board1-secret name=board1-agent keys=board1\n"
                                    "board2-secret name=board2-agent keys=board2\n");
  std::ofstream(dir + "/board1.token") << "board1-secret\n";
  std::ofstream(dir + "/board2.token") << "board2-secret\n";
  PrivateFile(dir + "/board1.token");
  PrivateFile(dir + "/board2.token");
  absl::StatusOr<std::string> board1 =
      cluster_->StartAgent("board1", {"--token", dir + "/board1.token"});
  ASSERT_TRUE(board1.ok()) << board1.status();

  // board2's credential cannot pose as board1.
  Process impostor({TestBinaries().agent, "--server", cluster_->address(), "--device-key", "board1",
                    "--cache-dir", dir + "/impostor", "--token", dir + "/board2.token",
                    "--trusted-keys", Cluster::SigningKeyPath() + ".pub"},
                   dir + "/impostor.log");
  EXPECT_TRUE(impostor
                  .WaitForLog("PERMISSION_DENIED: agent credential 'board2-agent' may not serve "
                              "device key 'board1' (it may serve: board2)")
                  .ok())
      << impostor.Log();
  runtime::ChannelOptions alice;
  alice.token = "alice-secret";
  std::unique_ptr<client::KilnClient> client = *cluster_->Client(alice);
  absl::StatusOr<std::vector<v1::Device>> devices = client->ListDevices();
  ASSERT_TRUE(devices.ok()) << devices.status();
  ASSERT_EQ(devices->size(), 1u);
  EXPECT_EQ((*devices)[0].key(), "board1");
  EXPECT_EQ((*devices)[0].reported_by(), "board1-agent");
  EXPECT_EQ((*devices)[0].agents_connected(), 1);

  // A session of board2's own key, opened by hand: it may not fetch an artifact it runs no task
  // for, and a result it sends for board1's task is ignored.
  v1::Job compiled = CompileOk(*client, CompileRequest(kMlp));
  auto channel = grpc::CreateChannel(cluster_->address(), grpc::InsecureChannelCredentials());
  std::unique_ptr<v1::AgentService::Stub> stub = v1::AgentService::NewStub(channel);
  auto as_board2 = [](grpc::ClientContext* context) {
    context->AddMetadata("authorization", "Bearer board2-secret");
  };
  grpc::ClientContext session_context;
  as_board2(&session_context);
  auto session = stub->Connect(&session_context);
  v1::AgentMessage hello;
  hello.mutable_register_()->set_device_key("board2");
  ASSERT_TRUE(session->Write(hello));
  v1::ServerMessage registered;
  ASSERT_TRUE(session->Read(&registered));
  ASSERT_TRUE(registered.has_registered());
  for (const std::string& agent_id : {registered.registered().agent_id(), *board1}) {
    grpc::ClientContext context;
    as_board2(&context);
    v1::FetchArtifactRequest fetch;
    fetch.set_digest(compiled.artifact_digest());
    fetch.set_agent_id(agent_id);
    auto reader = stub->FetchArtifact(&context, fetch);
    v1::ArtifactChunk chunk;
    EXPECT_FALSE(reader->Read(&chunk));
    grpc::Status refused = reader->Finish();
    EXPECT_EQ(refused.error_code(), grpc::StatusCode::PERMISSION_DENIED) << agent_id;
    EXPECT_THAT(refused.error_message(), HasSubstr("is not the artifact of a task given to"));
  }
  v1::SubmitProfileRequest profile;
  profile.mutable_artifact()->set_digest(compiled.artifact_digest());
  profile.set_device_key("board1");
  profile.mutable_options()->set_repeat(20);
  absl::StatusOr<v1::SubmitResponse> submitted = client->SubmitProfile(profile);
  ASSERT_TRUE(submitted.ok()) << submitted.status();
  WaitFor(*client, submitted->job().id(),
          [](const v1::Job& j) { return j.state() != v1::JOB_STATE_QUEUED; });
  v1::AgentMessage forged;
  forged.mutable_result()->set_task_id(submitted->job().id());
  forged.mutable_result()->set_ok(true);
  forged.mutable_result()->mutable_profile()->set_median_seconds(1e-9);
  ASSERT_TRUE(session->Write(forged));
  absl::StatusOr<v1::Job> done = client->Wait(submitted->job().id());
  ASSERT_TRUE(done.ok()) << done.status();
  EXPECT_EQ(done->state(), v1::JOB_STATE_SUCCEEDED) << done->reason();
  EXPECT_GT(done->profile().median_seconds(), 1e-7) << "the forged result counted";
  EXPECT_EQ(done->profile().seconds_per_call_size(), 20);  // board1's measurement

  // The hand-made session is board2's only agent: given a task, its answer of a megabyte of error
  // text is cut at the string limit before it is kept as the job's reason.
  profile.set_device_key("board2");
  absl::StatusOr<v1::SubmitResponse> on_board2 = client->SubmitProfile(profile);
  ASSERT_TRUE(on_board2.ok()) << on_board2.status();
  v1::ServerMessage given;
  while (session->Read(&given) && !given.has_task()) {
  }
  ASSERT_TRUE(given.has_task());
  v1::AgentMessage verbose;
  verbose.mutable_result()->set_task_id(given.task().task_id());
  verbose.mutable_result()->set_error(std::string(1 << 20, 'e'));
  ASSERT_TRUE(session->Write(verbose));
  absl::StatusOr<v1::Job> failed = client->Wait(on_board2->job().id());
  ASSERT_TRUE(failed.ok()) << failed.status();
  EXPECT_EQ(failed->state(), v1::JOB_STATE_FAILED);
  EXPECT_LT(failed->reason().size(), 4200u);
  EXPECT_THAT(failed->reason(), HasSubstr("... (truncated)"));
  session_context.TryCancel();

  // A 4 MB module name is refused, naming the field; nothing is stored.
  v1::SubmitCompileRequest named = CompileRequest(kMlp);
  named.mutable_module()->set_name(std::string(4 << 20, 'n'));
  absl::StatusOr<v1::SubmitResponse> refused = client->SubmitCompile(named);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(refused.status().message(),
              HasSubstr("module.name: 4194304 bytes, more than the 4096 a string field may have"));
}

TEST_F(ServiceTest, TokenFilesAreReloadedOnSighup) {
  cluster_ = std::make_unique<Cluster>("reload");
  std::string tokens = cluster_->dir() + "/client.tokens";
  std::ofstream(tokens) << "alice-secret name=alice\n";
  PrivateFile(tokens);
  ASSERT_TRUE(cluster_->StartDaemon({"--client-tokens", tokens}).ok());
  auto list_as = [&](const char* token) {
    runtime::ChannelOptions o;
    o.token = token;
    return (*cluster_->Client(o))->ListJobs().status();
  };
  EXPECT_TRUE(list_as("alice-secret").ok());
  EXPECT_EQ(list_as("carol-secret").code(), absl::StatusCode::kUnauthenticated);

  std::ofstream(tokens, std::ios::trunc) << "carol-secret name=carol\n";
  cluster_->daemon().Signal(SIGHUP);
  ASSERT_TRUE(cluster_->daemon().WaitForLog("tokens reloaded", 5000).ok())
      << cluster_->daemon().Log();
  EXPECT_TRUE(list_as("carol-secret").ok());
  EXPECT_EQ(list_as("alice-secret").code(), absl::StatusCode::kUnauthenticated);

  // A file that does not read is refused, and the tokens in use stay.
  std::ofstream(tokens, std::ios::trunc) << "carol-secret role=root\n";
  cluster_->daemon().Signal(SIGHUP);
  ASSERT_TRUE(cluster_->daemon().WaitForLog("token reload refused", 5000).ok())
      << cluster_->daemon().Log();
  EXPECT_TRUE(list_as("carol-secret").ok());
}

// Tokens with separate roles, over mutual TLS with certificates made by openssl.
class SecureServiceTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = Cluster::TmpPath("pki");
    std::string d = dir_;
    std::string script = absl::StrCat(
        "set -e; cd ", d, ";",
        "openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=kiln-test-ca "
        "-keyout ca.key -out ca.pem 2>/dev/null;",
        "printf 'subjectAltName=IP:127.0.0.1,DNS:localhost' > san.ext;",
        "openssl req -newkey rsa:2048 -nodes -subj /CN=localhost -keyout server.key "
        "-out server.csr 2>/dev/null;",
        "openssl x509 -req -in server.csr -CA ca.pem -CAkey ca.key -CAcreateserial -days 2 "
        "-extfile san.ext -out server.pem 2>/dev/null;",
        "openssl req -newkey rsa:2048 -nodes -subj /CN=client -keyout client.key "
        "-out client.csr 2>/dev/null;",
        "openssl x509 -req -in client.csr -CA ca.pem -CAkey ca.key -CAcreateserial -days 2 "
        "-out client.pem 2>/dev/null;",
        "openssl req -newkey rsa:2048 -nodes -subj /CN=other-client -keyout other.key "
        "-out other.csr 2>/dev/null;",
        "openssl x509 -req -in other.csr -CA ca.pem -CAkey ca.key -CAcreateserial -days 2 "
        "-out other.pem 2>/dev/null;",
        "openssl req -newkey rsa:2048 -nodes -subj /CN=board-agent -keyout agent.key "
        "-out agent.csr 2>/dev/null;",
        "openssl x509 -req -in agent.csr -CA ca.pem -CAkey ca.key -CAcreateserial -days 2 "
        "-out agent.pem 2>/dev/null;",
        "echo client-secret > client.tokens; echo agent-secret > agent.tokens;",
        "chmod 600 client.tokens agent.tokens;",
        "echo client-secret > client.token; echo agent-secret > agent.token;",
        "chmod 600 client.token agent.token;");
    ASSERT_EQ(std::system(script.c_str()), 0);
  }

  runtime::ChannelOptions Tls(const std::string& token) {
    runtime::ChannelOptions o;
    o.tls_ca = dir_ + "/ca.pem";
    o.tls_cert = dir_ + "/client.pem";
    o.tls_key = dir_ + "/client.key";
    o.token = token;
    return o;
  }

  static std::string dir_;
};
std::string SecureServiceTest::dir_;

TEST_F(SecureServiceTest, TokensAndMutualTls) {
  Cluster cluster("secure");
  ASSERT_TRUE(
      cluster
          .StartDaemon({"--tls-cert", dir_ + "/server.pem", "--tls-key", dir_ + "/server.key",
                        "--tls-client-ca", dir_ + "/ca.pem", "--client-tokens",
                        dir_ + "/client.tokens", "--agent-tokens", dir_ + "/agent.tokens"})
          .ok());
  auto call = [&](runtime::ChannelOptions o) {
    absl::StatusOr<std::unique_ptr<client::KilnClient>> c = cluster.Client(o);
    EXPECT_TRUE(c.ok());
    return (*c)->ListJobs().status();
  };
  EXPECT_TRUE(call(Tls("client-secret")).ok());
  absl::Status missing = call(Tls(""));
  EXPECT_EQ(missing.code(), absl::StatusCode::kUnauthenticated) << missing;
  EXPECT_EQ(call(Tls("wrong")).code(), absl::StatusCode::kUnauthenticated);
  // The other role's token gets the answer an unknown token gets: a guess learns nothing.
  absl::Status role = call(Tls("agent-secret"));
  EXPECT_EQ(role.code(), absl::StatusCode::kUnauthenticated) << role;
  EXPECT_EQ(role.message(), call(Tls("wrong")).message());
  // Without a client certificate, or without TLS, there is no connection at all.
  runtime::ChannelOptions no_cert = Tls("client-secret");
  no_cert.tls_cert.clear();
  no_cert.tls_key.clear();
  EXPECT_EQ(call(no_cert).code(), absl::StatusCode::kUnavailable);
  runtime::ChannelOptions plain;
  plain.token = "client-secret";
  EXPECT_EQ(call(plain).code(), absl::StatusCode::kUnavailable);

  // An agent with the agent token registers; with the client token it is refused.
  std::vector<std::string> tls = {"--tls-ca",           dir_ + "/ca.pem", "--tls-cert",
                                  dir_ + "/client.pem", "--tls-key",      dir_ + "/client.key"};
  std::vector<std::string> bad = tls;
  bad.insert(bad.end(), {"--token", dir_ + "/client.token"});
  Process refused({TestBinaries().agent, "--server", cluster.address(), "--device-key", "cpu",
                   "--cache-dir", cluster.dir() + "/refused", "--token", dir_ + "/client.token",
                   "--tls-ca", dir_ + "/ca.pem", "--tls-cert", dir_ + "/client.pem", "--tls-key",
                   dir_ + "/client.key", "--trusted-keys", Cluster::SigningKeyPath() + ".pub"},
                  cluster.dir() + "/refused.log");
  EXPECT_TRUE(refused.WaitForLog("UNAUTHENTICATED: not an agent token of this server").ok())
      << refused.Log();
  std::vector<std::string> good = tls;
  good.insert(good.end(), {"--token", dir_ + "/agent.token"});
  absl::StatusOr<std::string> agent = cluster.StartAgent("cpu", good);
  ASSERT_TRUE(agent.ok()) << agent.status();
  absl::StatusOr<std::unique_ptr<client::KilnClient>> c = cluster.Client(Tls("client-secret"));
  v1::Job compiled = CompileOk(**c, CompileRequest(kMlp));
  v1::SubmitProfileRequest profile;
  profile.mutable_artifact()->set_digest(compiled.artifact_digest());
  profile.set_device_key("cpu");
  profile.mutable_options()->set_repeat(2);
  absl::StatusOr<v1::SubmitResponse> submitted = (*c)->SubmitProfile(profile);
  ASSERT_TRUE(submitted.ok()) << submitted.status();
  absl::StatusOr<v1::Job> done = (*c)->Wait(submitted->job().id());
  ASSERT_TRUE(done.ok());
  EXPECT_EQ(done->state(), v1::JOB_STATE_SUCCEEDED) << done->reason();
}

// Without tokens, agent certificates name the device keys they may serve (--agent-certs); a
// certificate that is not listed is no agent.
TEST_F(SecureServiceTest, AgentCertificatesServeOnlyTheirKeys) {
  Cluster cluster("mtls_agents");
  std::ofstream(cluster.dir() + "/agent.certs") << "client keys=board1\n";
  ASSERT_TRUE(cluster
                  .StartDaemon({"--tls-cert", dir_ + "/server.pem", "--tls-key",
                                dir_ + "/server.key", "--tls-client-ca", dir_ + "/ca.pem",
                                "--agent-certs", cluster.dir() + "/agent.certs"})
                  .ok());
  auto agent_with = [&](const std::string& cert, const std::string& key, const char* device,
                        const char* log) {
    return std::make_unique<Process>(
        std::vector<std::string>{TestBinaries().agent, "--server", cluster.address(),
                                 "--device-key", device, "--cache-dir", cluster.dir() + "/" + log,
                                 "--tls-ca", dir_ + "/ca.pem", "--tls-cert", dir_ + "/" + cert,
                                 "--tls-key", dir_ + "/" + key, "--trusted-keys",
                                 Cluster::SigningKeyPath() + ".pub"},
        cluster.dir() + "/" + log + ".log");
  };
  auto good = agent_with("client.pem", "client.key", "board1", "good");
  EXPECT_TRUE(good->WaitForLog("kiln-agent: registered as ").ok()) << good->Log();
  auto wrong_key = agent_with("client.pem", "client.key", "board2", "wrong_key");
  EXPECT_TRUE(wrong_key
                  ->WaitForLog("PERMISSION_DENIED: agent credential 'cert:client' may not serve "
                               "device key 'board2' (it may serve: board1)")
                  .ok())
      << wrong_key->Log();
  auto unlisted = agent_with("other.pem", "other.key", "board1", "unlisted");
  EXPECT_TRUE(unlisted->WaitForLog("UNAUTHENTICATED: not an agent certificate of this server").ok())
      << unlisted->Log();
}

// Under mutual TLS without tokens the certificate is the principal, on gRPC and on the
// dashboard's JSON API alike (finding 3: the dashboard took every certificate for an admin); an
// agent's certificate is no client; and kilnd refuses to start with no word on which
// certificates are agents.
TEST_F(SecureServiceTest, WithMutualTlsAloneTheCertificateIsThePrincipal) {
  const std::string no_agents = Cluster::TmpPath("mtls_no_agents");
  Process refused({TestBinaries().kilnd, "--listen", "127.0.0.1:0", "--store", no_agents + "/store",
                   "--tls-cert", dir_ + "/server.pem", "--tls-key", dir_ + "/server.key",
                   "--tls-client-ca", dir_ + "/ca.pem"},
                  no_agents + "/kilnd.log");
  EXPECT_NE(refused.Wait(), 0);
  EXPECT_THAT(refused.Log(), HasSubstr("mutual TLS without tokens needs --agent-certs"));

  Cluster cluster("mtls_owners");
  std::ofstream(cluster.dir() + "/agent.certs") << "board-agent keys=cpu\n";
  ASSERT_TRUE(cluster
                  .StartDaemon({"--tls-cert", dir_ + "/server.pem", "--tls-key",
                                dir_ + "/server.key", "--tls-client-ca", dir_ + "/ca.pem",
                                "--agent-certs", cluster.dir() + "/agent.certs"})
                  .ok());
  runtime::ChannelOptions other = Tls("");
  other.tls_cert = dir_ + "/other.pem";
  other.tls_key = dir_ + "/other.key";
  absl::StatusOr<std::unique_ptr<client::KilnClient>> mine = cluster.Client(Tls(""));
  absl::StatusOr<std::unique_ptr<client::KilnClient>> theirs = cluster.Client(other);
  ASSERT_TRUE(mine.ok() && theirs.ok());
  v1::Job compiled = CompileOk(**mine, CompileRequest(kMlp));
  EXPECT_EQ(compiled.client(), "cert:client");
  EXPECT_TRUE((*mine)->GetJob(compiled.id()).ok());
  EXPECT_EQ((*theirs)->GetJob(compiled.id()).status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ((*theirs)->DownloadArtifact(compiled.artifact_digest()).status().code(),
            absl::StatusCode::kNotFound);
  EXPECT_TRUE((*theirs)->ListJobs()->empty());
  EXPECT_EQ((*mine)->ListJobs()->size(), 1u);

  // The agent's certificate registers as the agent, and is refused as a client.
  runtime::ChannelOptions agent_cert = Tls("");
  agent_cert.tls_cert = dir_ + "/agent.pem";
  agent_cert.tls_key = dir_ + "/agent.key";
  absl::StatusOr<std::unique_ptr<client::KilnClient>> as_client = cluster.Client(agent_cert);
  ASSERT_TRUE(as_client.ok());
  absl::Status as_client_status = (*as_client)->ListJobs().status();
  EXPECT_EQ(as_client_status.code(), absl::StatusCode::kUnauthenticated) << as_client_status;
  EXPECT_THAT(as_client_status.message(), HasSubstr("an agent certificate is not a client"));

  // The dashboard's JSON API over HTTPS: each certificate its own principal, as on gRPC.
  auto api = [&](const std::string& cert, const std::string& path) {
    httplib::SSLClient https("127.0.0.1", cluster.metrics_port(), dir_ + "/" + cert + ".pem",
                             dir_ + "/" + cert + ".key");
    https.set_ca_cert_path((dir_ + "/ca.pem").c_str());
    https.enable_server_certificate_verification(true);
    httplib::Result r = https.Get(path);
    return r ? std::make_pair(r->status, r->body) : std::make_pair(-1, std::string());
  };
  auto [mine_status, mine_body] = api("client", "/api/jobs");
  EXPECT_EQ(mine_status, 200);
  EXPECT_THAT(mine_body, HasSubstr(compiled.id()));
  auto [theirs_status, theirs_body] = api("other", "/api/jobs");
  EXPECT_EQ(theirs_status, 200);
  EXPECT_THAT(theirs_body, ::testing::Not(HasSubstr(compiled.id())));
  EXPECT_EQ(api("other", "/api/jobs/" + compiled.id()).first, 404);
  EXPECT_EQ(api("agent", "/api/jobs").first, 401);
}

}  // namespace
}  // namespace kiln::testing
