// HttpSender against real HTTP over loopback (tests/harness/http_receiver).
#include "http_sender.h"

#include <arpa/inet.h>
#include <curl/curl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <openssl/ssl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cctype>
#include <condition_variable>
#include <cstdlib>
#include <filesystem>
#include <future>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "free_port.h"
#include "http_receiver.h"
#include "subprocess.h"

namespace bulkhead {
namespace {

using testing::FreeLoopbackPort;
using testing::HttpReceiver;
using testing::ReceivedRequest;
using testing::Reply;
using namespace std::chrono_literals;

// Generous bound on any wait for an outcome that should come at once: a slow CI machine or
// a sanitizer build must never trip it.
constexpr auto kWait = 60s;

// curl_global_init is the caller's job, once, before any thread: here, before the first test.
class CurlEnvironment : public ::testing::Environment {
 public:
  void SetUp() override { ASSERT_EQ(curl_global_init(CURL_GLOBAL_DEFAULT), CURLE_OK); }
  void TearDown() override { curl_global_cleanup(); }
};
[[maybe_unused]] ::testing::Environment* const kCurlEnvironment =
    ::testing::AddGlobalTestEnvironment(new CurlEnvironment);

::testing::AssertionResult Contains(const std::string& text, const std::string& part) {
  if (text.find(part) != std::string::npos) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "\"" << text << "\" does not contain \"" << part << "\"";
}

// The sender's options with the SSRF guard letting the loopback receiver through (a sender's
// default denies loopback, as a node's does).
HttpSender::Options Loopback(HttpSender::Options options = {}) {
  options.guard = NetworkGuard(
      {std::get<Network>(ParseCidr("127.0.0.0/8")), std::get<Network>(ParseCidr("::1/128"))});
  return options;
}

HttpRequest Post(std::string url) {
  HttpRequest request;
  request.url = std::move(url);
  request.body = R"({"event":"ping"})";
  return request;
}

// Sends one request and waits for its outcome.
HttpOutcome SendAndWait(HttpSender& sender, HttpRequest request) {
  // Shared, so that a callback arriving after a failed wait has somewhere to write.
  auto promise = std::make_shared<std::promise<HttpOutcome>>();
  auto future = promise->get_future();
  sender.Send(std::move(request), [promise](const HttpOutcome& o) { promise->set_value(o); });
  if (future.wait_for(kWait) != std::future_status::ready) {
    ADD_FAILURE() << "no outcome within " << kWait.count() << " s";
    HttpOutcome none;
    none.error = HttpError::kOther;
    none.error_text = "test: no outcome";
    return none;
  }
  return future.get();
}

// Collects outcomes from many callbacks; must outlive the sender whose callbacks feed it.
class Outcomes {
 public:
  HttpSender::Callback Add() {
    return [this](const HttpOutcome& outcome) {
      std::lock_guard lock(mu_);
      outcomes_.push_back(outcome);
      changed_.notify_all();
    };
  }
  bool WaitFor(size_t n) {
    std::unique_lock lock(mu_);
    return changed_.wait_for(lock, kWait, [&] { return outcomes_.size() >= n; });
  }
  std::vector<HttpOutcome> Get() {
    std::lock_guard lock(mu_);
    return outcomes_;
  }

 private:
  std::mutex mu_;
  std::condition_variable changed_;
  std::vector<HttpOutcome> outcomes_;
};

Reply Hang(const ReceivedRequest&) {
  Reply reply;
  reply.hang = true;
  return reply;
}

size_t ThreadCount() {
  size_t n = 0;
  for ([[maybe_unused]] const auto& entry :
       std::filesystem::directory_iterator("/proc/self/task")) {
    ++n;
  }
  return n;
}

// Sets environment variables for its lifetime. Made before any thread of the test starts and
// destroyed after they stop: setenv is not safe while other threads read the environment.
class ScopedEnv {
 public:
  ScopedEnv(std::initializer_list<std::pair<std::string, std::string>> vars) {
    for (const auto& [name, value] : vars) {
      const char* old = std::getenv(name.c_str());
      saved_.emplace_back(name, old ? std::optional<std::string>(old) : std::nullopt);
      setenv(name.c_str(), value.c_str(), 1);
    }
  }
  ~ScopedEnv() {
    for (const auto& [name, old] : saved_) {
      if (old) {
        setenv(name.c_str(), old->c_str(), 1);
      } else {
        unsetenv(name.c_str());
      }
    }
  }

 private:
  std::vector<std::pair<std::string, std::optional<std::string>>> saved_;
};

TEST(HttpSender, DeliversA2xxWithTheCallersBodyAndHeaders) {
  HttpReceiver receiver([](const ReceivedRequest&) {
    Reply reply;
    reply.status = 202;
    reply.body = "accepted";
    return reply;
  });
  HttpSender sender(Loopback());
  HttpRequest request;
  request.url = receiver.Url("/hook/a?x=1");
  // Past libcurl's Expect: 100-continue threshold, so that its removal is tested too.
  request.body = R"({"data":")" + std::string(1536 * 1024, 'x') + R"("})";
  request.headers = {{"content-type", "application/json"},
                     {"webhook-id", "msg_42"},
                     {"webhook-timestamp", "1700000000"},
                     {"webhook-signature", "v1,c2lnbmF0dXJl"},
                     {"X-Empty", ""}};

  HttpOutcome outcome = SendAndWait(sender, request);

  EXPECT_EQ(outcome.status, 202);
  EXPECT_EQ(outcome.error, HttpError::kNone);
  EXPECT_EQ(outcome.error_text, "");
  EXPECT_TRUE(outcome.delivered());
  EXPECT_EQ(outcome.body_bytes, 8u);
  EXPECT_FALSE(outcome.body_truncated);
  EXPECT_GT(outcome.duration.count(), 0);

  std::vector<ReceivedRequest> received = receiver.Requests();
  ASSERT_EQ(received.size(), 1u);
  EXPECT_EQ(received[0].method, "POST");
  EXPECT_EQ(received[0].path, "/hook/a?x=1");
  EXPECT_EQ(received[0].body, request.body);
  std::map<std::string, std::string> expected = {
      {"host", "127.0.0.1:" + std::to_string(receiver.port())},
      {"content-length", std::to_string(request.body.size())},
      {"content-type", "application/json"},
      {"webhook-id", "msg_42"},
      {"webhook-timestamp", "1700000000"},
      {"webhook-signature", "v1,c2lnbmF0dXJl"},
      {"x-empty", ""},
  };
  // Exactly these: no Expect, no Accept, no User-Agent.
  EXPECT_EQ(received[0].headers, expected);
}

TEST(HttpSender, SendsNoContentTypeOrAcceptOfItsOwn) {
  HttpReceiver receiver;
  HttpSender sender(Loopback());

  HttpOutcome outcome = SendAndWait(sender, Post(receiver.Url("/bare")));

  EXPECT_TRUE(outcome.delivered());
  std::vector<ReceivedRequest> received = receiver.Requests();
  ASSERT_EQ(received.size(), 1u);
  std::map<std::string, std::string> expected = {
      {"host", "127.0.0.1:" + std::to_string(receiver.port())},
      {"content-length", "16"},
  };
  EXPECT_EQ(received[0].headers, expected);
  EXPECT_EQ(received[0].body, R"({"event":"ping"})");
}

TEST(HttpSender, A500IsAFailureWithItsStatus) {
  HttpReceiver receiver([](const ReceivedRequest&) {
    Reply reply;
    reply.status = 500;
    reply.body = "boom";
    return reply;
  });
  HttpSender sender(Loopback());

  HttpOutcome outcome = SendAndWait(sender, Post(receiver.Url("/fail")));

  EXPECT_EQ(outcome.status, 500);
  EXPECT_EQ(outcome.error, HttpError::kNone);
  EXPECT_FALSE(outcome.delivered());
  EXPECT_EQ(outcome.error_text, "HTTP 500");
  EXPECT_EQ(outcome.body_bytes, 4u);
}

TEST(HttpSender, A302IsReportedAndNotFollowed) {
  HttpReceiver receiver([](const ReceivedRequest& request) {
    Reply reply;
    if (request.path == "/redirect") {
      reply.status = 302;
      reply.headers = {{"Location", "/elsewhere"}};
    }
    return reply;
  });
  HttpSender sender(Loopback());

  HttpOutcome outcome = SendAndWait(sender, Post(receiver.Url("/redirect")));

  EXPECT_EQ(outcome.status, 302);
  EXPECT_EQ(outcome.error, HttpError::kNone);
  EXPECT_FALSE(outcome.delivered());
  EXPECT_EQ(outcome.error_text, "HTTP 302");
  std::vector<ReceivedRequest> received = receiver.Requests();
  ASSERT_EQ(received.size(), 1u);
  EXPECT_EQ(received[0].path, "/redirect");
}

TEST(HttpSender, KeepsTheRetryAfterOfTheAnswerTrimmed) {
  HttpReceiver receiver([](const ReceivedRequest& request) {
    Reply reply;
    reply.status = 429;
    if (request.path == "/date") {
      reply.headers = {{"Retry-After", "Sun, 06 Nov 1994 08:49:37 GMT"}};
    } else if (request.path == "/seconds") {
      reply.headers = {{"retry-after", " \t 120 \t"}};
    }
    return reply;
  });
  HttpSender sender(Loopback());

  HttpOutcome seconds = SendAndWait(sender, Post(receiver.Url("/seconds")));
  HttpOutcome date = SendAndWait(sender, Post(receiver.Url("/date")));
  HttpOutcome none = SendAndWait(sender, Post(receiver.Url("/none")));

  EXPECT_EQ(seconds.status, 429);
  EXPECT_EQ(seconds.retry_after, "120");
  EXPECT_EQ(date.retry_after, "Sun, 06 Nov 1994 08:49:37 GMT");
  EXPECT_EQ(none.status, 429);
  EXPECT_EQ(none.retry_after, "");  // and not left over from the request before on the handle
}

TEST(HttpSender, ARetryAfterLongerThanTheCapIsDropped) {
  HttpReceiver receiver([](const ReceivedRequest&) {
    Reply reply;
    reply.status = 503;
    reply.headers = {{"Retry-After", std::string(kMaxRetryAfterBytes + 1, '9')}};
    return reply;
  });
  HttpSender sender(Loopback());

  HttpOutcome outcome = SendAndWait(sender, Post(receiver.Url("/long")));

  EXPECT_EQ(outcome.status, 503);
  EXPECT_EQ(outcome.retry_after, "");
}

TEST(HttpSender, AHeaderFloodCostsNoMemoryAndATooLargeOneFails) {
  // 200 headers of 1 KiB: within curl's limits; only Retry-After is kept.
  // 2,000 of them (2 MiB): past curl's 300 KiB limit on one response's headers: a failure.
  HttpReceiver receiver([](const ReceivedRequest& request) {
    Reply reply;
    reply.status = 429;
    int n = request.path == "/flood" ? 200 : 2000;
    for (int i = 0; i < n; ++i) {
      reply.headers.emplace_back("x-junk-" + std::to_string(i), std::string(1024, 'j'));
    }
    reply.headers.emplace_back("Retry-After", "7");
    return reply;
  });
  HttpSender sender(Loopback());

  HttpOutcome flood = SendAndWait(sender, Post(receiver.Url("/flood")));
  HttpOutcome huge = SendAndWait(sender, Post(receiver.Url("/huge-flood")));

  EXPECT_EQ(flood.error, HttpError::kNone);
  EXPECT_EQ(flood.status, 429);
  EXPECT_EQ(flood.retry_after, "7");
  EXPECT_NE(huge.error, HttpError::kNone) << huge.error_text;
  EXPECT_FALSE(huge.delivered());
}

TEST(HttpSender, ConnectionRefusedIsAConnectError) {
  HttpSender sender(Loopback());
  int port = FreeLoopbackPort();

  HttpOutcome outcome =
      SendAndWait(sender, Post("http://127.0.0.1:" + std::to_string(port) + "/hook"));

  EXPECT_EQ(outcome.error, HttpError::kConnect);
  EXPECT_EQ(outcome.status, 0);
  EXPECT_FALSE(outcome.delivered());
  EXPECT_TRUE(Contains(outcome.error_text, std::to_string(port)));
}

TEST(HttpSender, AHangingEndpointTimesOut) {
  HttpReceiver receiver(Hang);
  HttpSender sender(Loopback());
  HttpRequest request = Post(receiver.Url("/hang"));
  request.request_timeout = 200ms;

  HttpOutcome outcome = SendAndWait(sender, request);

  EXPECT_EQ(outcome.error, HttpError::kTimeout);
  EXPECT_EQ(outcome.status, 0);
  EXPECT_FALSE(outcome.delivered());
  EXPECT_TRUE(Contains(outcome.error_text, "timed out"));
  EXPECT_GE(outcome.duration, 200ms);
  EXPECT_LT(outcome.duration, 5s);
  EXPECT_EQ(receiver.request_count(), 1u);
}

// Issue 31, defect 7: libcurl 8.10.0–8.11.0 did not call the timer callback again after a
// timeout action that came early, and a sender that waited for that call left its requests
// without a timeout. With the timer early and those calls dropped, a hanging request must
// still time out.
TEST(HttpSender, AHangingEndpointTimesOutWhenAnEarlyTimerIsNotReArmedByLibcurl) {
  HttpReceiver receiver(Hang);
  HttpSender::Options options = Loopback();
  options.early_timer_without_rearm = true;
  HttpSender sender(options);
  HttpRequest request = Post(receiver.Url("/hang"));
  request.request_timeout = 200ms;

  HttpOutcome outcome = SendAndWait(sender, request);

  EXPECT_EQ(outcome.error, HttpError::kTimeout) << outcome.error_text;
  EXPECT_LT(outcome.duration, 5s);
}

TEST(HttpSender, AHugeBodyIsCutAtTheCapAndStillDelivered) {
  HttpReceiver receiver([](const ReceivedRequest&) {
    Reply reply;
    reply.body = std::string(1024 * 1024, 'z');
    return reply;
  });
  HttpSender sender(Loopback({.max_response_bytes = 64 * 1024}));

  HttpOutcome outcome = SendAndWait(sender, Post(receiver.Url("/huge")));

  EXPECT_EQ(outcome.status, 200);
  EXPECT_EQ(outcome.error, HttpError::kNone);
  EXPECT_TRUE(outcome.body_truncated);
  EXPECT_EQ(outcome.body_bytes, 64u * 1024);
  EXPECT_TRUE(outcome.delivered());
  EXPECT_EQ(outcome.error_text, "");
}

TEST(HttpSender, ABodyExactlyAtTheCapIsNotTruncated) {
  HttpReceiver receiver([](const ReceivedRequest&) {
    Reply reply;
    reply.body = std::string(1000, 'z');
    return reply;
  });
  HttpSender sender(Loopback({.max_response_bytes = 1000}));

  HttpOutcome outcome = SendAndWait(sender, Post(receiver.Url("/exact")));

  EXPECT_TRUE(outcome.delivered());
  EXPECT_FALSE(outcome.body_truncated);
  EXPECT_EQ(outcome.body_bytes, 1000u);
}

TEST(HttpSender, SequentialRequestsReuseOneConnection) {
  HttpReceiver receiver;
  HttpSender sender(Loopback());

  for (int i = 0; i < 50; ++i) {
    HttpOutcome outcome = SendAndWait(sender, Post(receiver.Url("/seq/" + std::to_string(i))));
    ASSERT_TRUE(outcome.delivered()) << i << ": " << outcome.error_text;
  }

  EXPECT_EQ(receiver.connections_accepted(), 1u);
  std::vector<ReceivedRequest> received = receiver.Requests();
  ASSERT_EQ(received.size(), 50u);
  for (int i = 0; i < 50; ++i) {
    EXPECT_EQ(received[i].path, "/seq/" + std::to_string(i));
    EXPECT_EQ(received[i].connection, received[0].connection);
  }
}

// libcurl's cache limit counts busy connections too: with a fixed limit of 2, twenty hung
// requests would make it close every healthy connection after use.
TEST(HttpSender, KeepAliveSurvivesMoreHungRequestsThanIdleConnections) {
  HttpReceiver hung(Hang);
  HttpReceiver fast;
  Outcomes hung_outcomes;
  HttpSender sender(Loopback({.max_idle_connections = 2}));
  for (int i = 0; i < 20; ++i) sender.Send(Post(hung.Url("/hang")), hung_outcomes.Add());
  ASSERT_TRUE(hung.WaitForRequests(20, kWait));

  for (int i = 0; i < 10; ++i) {
    ASSERT_TRUE(SendAndWait(sender, Post(fast.Url("/fast"))).delivered()) << i;
  }

  EXPECT_EQ(fast.connections_accepted(), 1u);
  EXPECT_EQ(fast.request_count(), 10u);
}

TEST(HttpSender, AThousandHungRequestsHoldSlotsNotThreads) {
  constexpr size_t kHung = 1000;
  HttpReceiver hung(Hang);
  HttpReceiver fast;
  Outcomes outcomes;
  auto sender = std::make_unique<HttpSender>(Loopback());
  const size_t threads_before = ThreadCount();

  for (size_t i = 0; i < kHung; ++i) {
    HttpRequest request = Post(hung.Url("/hang"));
    request.connect_timeout = 120s;
    request.request_timeout = 120s;
    sender->Send(std::move(request), outcomes.Add());
  }
  ASSERT_TRUE(hung.WaitForOpenConnections(kHung, kWait)) << hung.open_connections();
  ASSERT_TRUE(hung.WaitForRequests(kHung, kWait)) << hung.request_count();

  EXPECT_EQ(sender->in_flight(), kHung);
  EXPECT_EQ(hung.open_connections(), kHung);
  EXPECT_EQ(ThreadCount(), threads_before);

  HttpOutcome healthy = SendAndWait(*sender, Post(fast.Url("/fast")));
  EXPECT_TRUE(healthy.delivered()) << healthy.error_text;
  EXPECT_EQ(sender->in_flight(), kHung);
  EXPECT_TRUE(outcomes.Get().empty());

  sender.reset();
  std::vector<HttpOutcome> cancelled = outcomes.Get();
  ASSERT_EQ(cancelled.size(), kHung);
  for (const HttpOutcome& outcome : cancelled) {
    EXPECT_EQ(outcome.error, HttpError::kCancelled);
  }
}

TEST(HttpSender, ProxyVariablesInTheEnvironmentAreIgnored) {
  // First: set before the receiver's and the sender's threads start, restored after they end.
  ScopedEnv env({{"http_proxy", "http://127.0.0.1:1"},
                 {"HTTP_PROXY", "http://127.0.0.1:1"},
                 {"https_proxy", "http://127.0.0.1:1"},
                 {"HTTPS_PROXY", "http://127.0.0.1:1"},
                 {"all_proxy", "http://127.0.0.1:1"},
                 {"ALL_PROXY", "http://127.0.0.1:1"}});
  HttpReceiver receiver;
  HttpSender sender(Loopback());

  HttpOutcome outcome = SendAndWait(sender, Post(receiver.Url("/direct")));

  EXPECT_TRUE(outcome.delivered()) << outcome.error_text;
  std::vector<ReceivedRequest> received = receiver.Requests();
  ASSERT_EQ(received.size(), 1u);
  EXPECT_EQ(received[0].path, "/direct");  // a proxied request would carry the absolute URL
}

TEST(HttpSender, OtherSchemesFailAsProtocolErrorsUnsent) {
  HttpReceiver receiver;
  HttpSender sender(Loopback());
  std::string ftp = "ftp://127.0.0.1:" + std::to_string(receiver.port()) + "/hook";

  HttpOutcome over_ftp = SendAndWait(sender, Post(ftp));
  HttpOutcome from_file = SendAndWait(sender, Post("file:///etc/hostname"));
  HttpOutcome malformed = SendAndWait(sender, Post("http://[::1/hook"));

  EXPECT_EQ(over_ftp.error, HttpError::kProtocol);
  EXPECT_EQ(over_ftp.status, 0);
  EXPECT_TRUE(Contains(over_ftp.error_text, "ftp"));
  EXPECT_EQ(from_file.error, HttpError::kProtocol);
  EXPECT_EQ(from_file.status, 0);
  EXPECT_EQ(from_file.body_bytes, 0u);
  EXPECT_EQ(malformed.error, HttpError::kProtocol);
  EXPECT_EQ(receiver.connections_accepted(), 0u);
}

TEST(HttpSender, AHeaderWithALineBreakFailsUnsent) {
  HttpReceiver receiver;
  HttpSender sender(Loopback());
  HttpRequest request = Post(receiver.Url("/hook"));
  request.headers = {{"webhook-id", "msg_1\r\nX-Injected: yes"}};

  HttpOutcome outcome = SendAndWait(sender, request);

  EXPECT_EQ(outcome.error, HttpError::kProtocol);
  EXPECT_TRUE(Contains(outcome.error_text, "webhook-id"));
  EXPECT_EQ(receiver.connections_accepted(), 0u);
}

TEST(HttpSender, HttpsToAPlainHttpServerIsATlsError) {
  HttpReceiver receiver;
  HttpSender sender(Loopback());

  HttpOutcome outcome =
      SendAndWait(sender, Post("https://127.0.0.1:" + std::to_string(receiver.port()) + "/hook"));

  EXPECT_EQ(outcome.error, HttpError::kTls);
  EXPECT_EQ(outcome.status, 0);
  EXPECT_EQ(receiver.request_count(), 0u);
}

TEST(HttpSender, ASlowReplyDoesNotHoldUpAFastOne) {
  HttpReceiver receiver([](const ReceivedRequest& request) {
    Reply reply;
    if (request.path == "/slow") reply.delay = 300ms;
    reply.body = request.path;
    return reply;
  });
  std::mutex mu;
  std::vector<std::string> order;
  Outcomes outcomes;
  HttpSender sender(Loopback());
  auto record = [&](std::string name) {
    return [&, name, done = outcomes.Add()](const HttpOutcome& outcome) {
      {
        std::lock_guard lock(mu);
        order.push_back(name);
      }
      done(outcome);
    };
  };

  sender.Send(Post(receiver.Url("/slow")), record("slow"));
  ASSERT_TRUE(receiver.WaitForRequests(1, kWait));
  sender.Send(Post(receiver.Url("/fast")), record("fast"));
  ASSERT_TRUE(outcomes.WaitFor(2));

  std::lock_guard lock(mu);
  EXPECT_EQ(order, (std::vector<std::string>{"fast", "slow"}));
  for (const HttpOutcome& outcome : outcomes.Get()) EXPECT_TRUE(outcome.delivered());
}

TEST(HttpSender, DestructionCancelsQueuedAndInFlightRequests) {
  HttpReceiver receiver(Hang);
  Outcomes outcomes;
  auto sender = std::make_unique<HttpSender>(Loopback());
  for (int i = 0; i < 20; ++i) sender->Send(Post(receiver.Url("/hang")), outcomes.Add());
  ASSERT_TRUE(receiver.WaitForRequests(20, kWait));
  // Sent just before destruction: queued or barely started, cancelled either way.
  for (int i = 0; i < 5; ++i) sender->Send(Post(receiver.Url("/late")), outcomes.Add());

  sender.reset();

  std::vector<HttpOutcome> got = outcomes.Get();
  ASSERT_EQ(got.size(), 25u);
  for (const HttpOutcome& outcome : got) {
    EXPECT_EQ(outcome.error, HttpError::kCancelled);
    EXPECT_FALSE(outcome.delivered());
  }
}

TEST(HttpSender, ACallbackMaySendAgain) {
  HttpReceiver receiver;
  Outcomes outcomes;
  HttpSender sender(Loopback());
  auto second = outcomes.Add();
  sender.Send(Post(receiver.Url("/first")), [&](const HttpOutcome& first) {
    EXPECT_TRUE(first.delivered());
    sender.Send(Post(receiver.Url("/second")), second);
  });

  ASSERT_TRUE(outcomes.WaitFor(1));
  EXPECT_TRUE(outcomes.Get()[0].delivered());
  EXPECT_EQ(receiver.request_count(), 2u);
}

std::vector<HttpSender::Outgoing> Batch(HttpReceiver& receiver, const std::string& prefix, int n,
                                        Outcomes& outcomes) {
  std::vector<HttpSender::Outgoing> batch;
  for (int i = 0; i < n; ++i) {
    batch.push_back({Post(receiver.Url(prefix + std::to_string(i))), outcomes.Add()});
  }
  return batch;
}

TEST(HttpSender, ABatchIsSentWholeEachCallbackOnce) {
  HttpReceiver receiver;
  Outcomes outcomes;
  HttpSender sender(Loopback());
  sender.Send(Batch(receiver, "/batch/", 100, outcomes));

  ASSERT_TRUE(outcomes.WaitFor(100));
  for (const HttpOutcome& outcome : outcomes.Get()) EXPECT_TRUE(outcome.delivered());
  std::set<std::string> paths;
  for (const ReceivedRequest& r : receiver.Requests()) paths.insert(r.path);
  EXPECT_EQ(paths.size(), 100u);
  EXPECT_EQ(outcomes.Get().size(), 100u);  // no callback ran twice
  EXPECT_EQ(sender.in_flight(), 0u);
  sender.Send(std::vector<HttpSender::Outgoing>{});  // an empty batch is nothing to do
  EXPECT_EQ(sender.in_flight(), 0u);
}

// Send wakes the I/O thread only when its queue was empty. Four threads sending at once, one
// request or a batch of four in turn, must still have every request sent, and counted in and
// out of in_flight() once.
TEST(HttpSender, SendsFromManyThreadsAtOnceAllArrive) {
  HttpReceiver receiver;
  Outcomes outcomes;
  HttpSender sender(Loopback());
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 50; ++i) {
        const std::string prefix = "/t" + std::to_string(t) + "/" + std::to_string(i) + "/";
        if (i % 2 == 0) {
          sender.Send(Post(receiver.Url(prefix + "0")), outcomes.Add());
        } else {
          sender.Send(Batch(receiver, prefix, 4, outcomes));
        }
      }
    });
  }
  for (auto& thread : threads) thread.join();

  const size_t total = 4 * (25 * 1 + 25 * 4);
  ASSERT_TRUE(outcomes.WaitFor(total));
  for (const HttpOutcome& outcome : outcomes.Get()) EXPECT_TRUE(outcome.delivered());
  EXPECT_EQ(receiver.request_count(), total);
  EXPECT_EQ(outcomes.Get().size(), total);
  EXPECT_EQ(sender.in_flight(), 0u);
}

// Each Send to a sender with nothing queued must wake its I/O thread. Without the wake-up a
// request waits for the thread's idle timeout (1 s): these 100 rounds would take 100 s, past
// the test's whole minute.
TEST(HttpSender, EverySendToAnIdleSenderWakesIt) {
  HttpReceiver receiver;
  Outcomes outcomes;
  HttpSender sender(Loopback());
  const auto deadline = std::chrono::steady_clock::now() + kWait;
  for (int round = 0; round < 100 && std::chrono::steady_clock::now() < deadline; ++round) {
    sender.Send(Batch(receiver, "/round/" + std::to_string(round) + "/", 2, outcomes));
    ASSERT_TRUE(outcomes.WaitFor(2 * (round + 1))) << round;
  }
  EXPECT_EQ(outcomes.Get().size(), 200u) << "the rounds ran out of time: a wake-up was lost";
  for (const HttpOutcome& outcome : outcomes.Get()) EXPECT_TRUE(outcome.delivered());
}

TEST(HttpSender, InvalidOptionsAreRefused) {
  HttpSender::Options options;
  EXPECT_EQ(options.Validate(), "");
  options.max_idle_connections = 0;
  EXPECT_TRUE(Contains(options.Validate(), "max_idle_connections"));
  EXPECT_THROW(HttpSender{options}, std::invalid_argument);
}

TEST(HttpSender, ANonPositiveTimeoutFailsUnsent) {
  HttpReceiver receiver;
  HttpSender sender(Loopback());
  HttpRequest request = Post(receiver.Url("/hook"));
  request.request_timeout = 0ms;

  HttpOutcome outcome = SendAndWait(sender, request);

  EXPECT_EQ(outcome.error, HttpError::kOther);
  EXPECT_EQ(receiver.connections_accepted(), 0u);
}

TEST(HttpSender, ErrorsHaveStableNames) {
  EXPECT_EQ(HttpErrorName(HttpError::kNone), "none");
  EXPECT_EQ(HttpErrorName(HttpError::kTimeout), "timeout");
  EXPECT_EQ(HttpErrorName(HttpError::kConnect), "connect");
  EXPECT_EQ(HttpErrorName(HttpError::kDns), "dns");
  EXPECT_EQ(HttpErrorName(HttpError::kTls), "tls");
  EXPECT_EQ(HttpErrorName(HttpError::kBlocked), "blocked");
  EXPECT_EQ(HttpErrorName(HttpError::kProtocol), "protocol");
  EXPECT_EQ(HttpErrorName(HttpError::kCancelled), "cancelled");
  EXPECT_EQ(HttpErrorName(HttpError::kOther), "other");
}

// ---- Outbound safety: the SSRF guard, schemes, redirects, TLS verification ------------------

TEST(HttpSender, LoopbackIsBlockedByDefaultAndNothingReachesIt) {
  HttpReceiver receiver;
  HttpSender sender;  // the default guard: no allowed_networks

  HttpOutcome outcome = SendAndWait(sender, Post(receiver.Url("/hook")));

  EXPECT_EQ(outcome.error, HttpError::kBlocked);
  EXPECT_EQ(outcome.status, 0);
  EXPECT_EQ(outcome.error_text,
            "blocked: 127.0.0.1 is in loopback (127.0.0.0/8); add it to allowed_networks to "
            "allow it");
  EXPECT_FALSE(outcome.delivered());
  EXPECT_EQ(receiver.connections_accepted(), 0u);
}

TEST(HttpSender, LoopbackIsDeliveredOnceAllowed) {
  HttpReceiver receiver;
  HttpSender sender(Loopback());

  HttpOutcome outcome = SendAndWait(sender, Post(receiver.Url("/hook")));

  EXPECT_TRUE(outcome.delivered()) << outcome.error_text;
  EXPECT_EQ(receiver.request_count(), 1u);
}

TEST(HttpSender, EverySpellingOfLoopbackIsBlockedAfterResolution) {
  HttpReceiver receiver;
  HttpSender sender;
  const std::string port = std::to_string(receiver.port());
  struct Case {
    std::string url;
    std::string says;  // part of the reason
  };
  const std::vector<Case> cases = {
      // A name: checked on the addresses DNS (here /etc/hosts) gave, each refused.
      {"http://localhost:" + port + "/hook", "is in loopback"},
      {"http://[::1]:" + port + "/hook", "blocked: ::1 is in loopback (::1/128)"},
      {"http://[::ffff:127.0.0.1]:" + port + "/hook",
       "blocked: ::ffff:127.0.0.1 embeds 127.0.0.1 (IPv4-mapped), which is in loopback"},
      // 127.0.0.1 as one decimal number: curl reads it as an IPv4 address.
      {"http://2130706433:" + port + "/hook", "blocked: 127.0.0.1 is in loopback"},
      {"http://0x7f000001:" + port + "/hook", "blocked: 127.0.0.1 is in loopback"},
      {"http://127.1:" + port + "/hook", "blocked: 127.0.0.1 is in loopback"},
      {"http://0.0.0.0:" + port + "/hook", "blocked: 0.0.0.0 is in \"this network\""},
  };
  for (const Case& c : cases) {
    HttpOutcome outcome = SendAndWait(sender, Post(c.url));
    EXPECT_EQ(outcome.error, HttpError::kBlocked) << c.url << ": " << outcome.error_text;
    EXPECT_TRUE(Contains(outcome.error_text, c.says)) << c.url;
  }
  EXPECT_EQ(receiver.connections_accepted(), 0u);
}

TEST(HttpSender, ANameIsDeliveredWhenEveryAddressItUsesIsAllowed) {
  HttpReceiver receiver;  // listens on 127.0.0.1 only; ::1, if tried first, is refused
  HttpSender sender(Loopback());

  HttpOutcome outcome =
      SendAndWait(sender, Post("http://localhost:" + std::to_string(receiver.port()) + "/named"));

  EXPECT_TRUE(outcome.delivered()) << outcome.error_text;
  EXPECT_EQ(receiver.request_count(), 1u);
}

TEST(HttpSender, OtherSchemesAreRefusedUnsentEvenWhenTheGuardWouldAllow) {
  HttpReceiver receiver;
  HttpSender sender(
      HttpSender::Options{.guard = NetworkGuard({std::get<Network>(ParseCidr("0.0.0.0/0"))})});
  for (const std::string& url : {"ftp://127.0.0.1:" + std::to_string(receiver.port()) + "/x",
                                 std::string("file:///etc/passwd"),
                                 "gopher://127.0.0.1:" + std::to_string(receiver.port()) + "/x",
                                 "dict://127.0.0.1:" + std::to_string(receiver.port()) + "/x"}) {
    HttpOutcome outcome = SendAndWait(sender, Post(url));
    EXPECT_EQ(outcome.error, HttpError::kProtocol) << url;
    EXPECT_EQ(outcome.body_bytes, 0u) << url;
  }
  EXPECT_EQ(receiver.connections_accepted(), 0u);
}

TEST(HttpSender, ARedirectToAnAllowedPlaceIsStillNotFollowed) {
  HttpReceiver receiver([](const ReceivedRequest& request) {
    Reply reply;
    if (request.path == "/moved") {
      reply.status = 307;  // 307 keeps the method: the most tempting one to follow
      reply.headers = {{"Location", "/target"}};
    }
    return reply;
  });
  HttpSender sender(Loopback());

  HttpOutcome outcome = SendAndWait(sender, Post(receiver.Url("/moved")));

  EXPECT_EQ(outcome.status, 307);
  EXPECT_FALSE(outcome.delivered());
  EXPECT_EQ(receiver.request_count(), 1u);
}

TEST(HttpSender, AProxyInTheEnvironmentCannotCarryABlockedRequest) {
  // A proxy on an allowed address would dial the blocked target on our behalf. It is never
  // used: the guard sees the target itself and refuses it. (Through the proxy, the outcome
  // would be a refused connection to 127.0.0.1:1, which the guard allows.) Set before the
  // sender's thread starts, restored after it ends.
  ScopedEnv env({{"http_proxy", "http://127.0.0.1:1"},
                 {"HTTP_PROXY", "http://127.0.0.1:1"},
                 {"ALL_PROXY", "http://127.0.0.1:1"}});
  HttpSender sender(
      HttpSender::Options{.guard = NetworkGuard({std::get<Network>(ParseCidr("127.0.0.1/32"))})});

  HttpOutcome outcome = SendAndWait(sender, Post("http://10.0.0.5/hook"));

  EXPECT_EQ(outcome.error, HttpError::kBlocked) << outcome.error_text;
  EXPECT_EQ(outcome.error_text,
            "blocked: 10.0.0.5 is in a private range (10.0.0.0/8); add it to allowed_networks "
            "to allow it");
}

// A one-connection-at-a-time HTTPS server on 127.0.0.1 with a self-signed certificate that
// `openssl req` (Debian's openssl package) makes for the test: real TLS over loopback. It
// answers every request 200 with an empty body and closes; a failed handshake (the client
// refused the certificate) is counted and the next connection accepted.
class TlsReceiver {
 public:
  TlsReceiver() : dir_(MakeDir()) {
    const std::string key = (dir_ / "key.pem").string(), cert = (dir_ / "cert.pem").string();
    auto made =
        testing::RunCommand({"/usr/bin/openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes",
                             "-keyout", key, "-out", cert, "-days", "1", "-subj", "/CN=127.0.0.1",
                             "-addext", "subjectAltName=IP:127.0.0.1,DNS:localhost"});
    if (made.exit_code != 0) throw std::runtime_error("openssl req failed: " + made.err);
    ctx_ = SSL_CTX_new(TLS_server_method());
    if (ctx_ == nullptr || SSL_CTX_use_certificate_chain_file(ctx_, cert.c_str()) != 1 ||
        SSL_CTX_use_PrivateKey_file(ctx_, key.c_str(), SSL_FILETYPE_PEM) != 1) {
      throw std::runtime_error("TlsReceiver: cannot load the certificate");
    }
    listen_ = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof(addr);
    if (listen_ < 0 || bind(listen_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
        listen(listen_, 16) != 0 ||
        getsockname(listen_, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
      throw std::runtime_error("TlsReceiver: cannot listen");
    }
    port_ = ntohs(addr.sin_port);
    thread_ = std::thread([this] { Run(); });
  }
  ~TlsReceiver() {
    shutdown(listen_, SHUT_RDWR);  // wakes accept()
    thread_.join();
    close(listen_);
    SSL_CTX_free(ctx_);
    std::filesystem::remove_all(dir_);
  }
  std::string Url() const { return "https://127.0.0.1:" + std::to_string(port_) + "/hook"; }
  int requests() const { return requests_.load(); }
  int failed_handshakes() const { return failed_handshakes_.load(); }

 private:
  static std::filesystem::path MakeDir() {
    std::string pattern = (std::filesystem::temp_directory_path() / "tls-XXXXXX").string();
    if (mkdtemp(pattern.data()) == nullptr) throw std::runtime_error("mkdtemp");
    return pattern;
  }
  void Run() {
    while (true) {
      int fd = accept(listen_, nullptr, nullptr);
      if (fd < 0) return;      // shut down
      timeval timeout{10, 0};  // a stuck client never holds the test for long
      setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof(timeout));
      SSL* ssl = SSL_new(ctx_);
      SSL_set_fd(ssl, fd);
      if (SSL_accept(ssl) != 1) {
        ++failed_handshakes_;
      } else {
        std::string request;
        char buffer[4096];
        // Headers, then Content-Length bytes of body.
        size_t header_end = std::string::npos;
        size_t want = 0;
        while (true) {
          int n = SSL_read(ssl, buffer, sizeof(buffer));
          if (n <= 0) break;
          request.append(buffer, n);
          if (header_end == std::string::npos) {
            header_end = request.find("\r\n\r\n");
            if (header_end == std::string::npos) continue;
            std::string head = request.substr(0, header_end);
            for (char& c : head) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
            size_t at = head.find("content-length: ");
            want = at == std::string::npos ? 0 : std::stoul(head.substr(at + 16));
          }
          if (request.size() >= header_end + 4 + want) break;
        }
        if (header_end != std::string::npos) {
          ++requests_;
          const std::string reply =
              "HTTP/1.1 200 OK\r\nContent-Length: 0\r\nConnection: close\r\n\r\n";
          SSL_write(ssl, reply.data(), static_cast<int>(reply.size()));
        }
        SSL_shutdown(ssl);
      }
      SSL_free(ssl);
      close(fd);
    }
  }

  std::filesystem::path dir_;
  SSL_CTX* ctx_ = nullptr;
  int listen_ = -1;
  int port_ = 0;
  std::atomic<int> requests_{0};
  std::atomic<int> failed_handshakes_{0};
  std::thread thread_;
};

TEST(HttpSender, ASelfSignedCertificateIsATlsErrorWithVerificationOn) {
  TlsReceiver receiver;
  HttpSender sender(Loopback());

  HttpOutcome outcome = SendAndWait(sender, Post(receiver.Url()));

  EXPECT_EQ(outcome.error, HttpError::kTls) << outcome.error_text;
  EXPECT_EQ(outcome.status, 0);
  EXPECT_EQ(receiver.requests(), 0);
}

TEST(HttpSender, ASelfSignedCertificateIsAcceptedWithVerificationOff) {
  TlsReceiver receiver;
  HttpSender::Options options = Loopback();
  options.tls_verify = false;
  HttpSender sender(options);

  HttpOutcome outcome = SendAndWait(sender, Post(receiver.Url()));

  EXPECT_TRUE(outcome.delivered()) << outcome.error_text;
  EXPECT_EQ(receiver.requests(), 1);
}

}  // namespace
}  // namespace bulkhead
