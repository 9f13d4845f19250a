#include "app_sender.h"

#include <algorithm>
#include <memory>
#include <mutex>
#include <pqxx/pqxx>
#include <thread>

namespace bulkhead::load {
namespace {

constexpr const char* kEnqueueSql = "SELECT bulkhead.enqueue($1, $2::jsonb)";

// Collects the threads' results. Guarded by mu.
struct Collector {
  std::mutex mu;
  SendReport report;

  void Add(std::vector<SentMessage> sent, int errors, const std::string& first_error) {
    std::lock_guard lock(mu);
    report.sent.insert(report.sent.end(), sent.begin(), sent.end());
    if (errors > 0 && report.errors == 0) report.first_error = first_error;
    report.errors += errors;
  }

  // Joins the senders and returns what they sent, stamped from `started_us` to now.
  SendReport Finish(std::vector<std::thread>& threads, int64_t started_us) {
    for (auto& t : threads) t.join();
    report.started_us = started_us;
    report.finished_us = NowUs();
    return std::move(report);
  }
};

// One delivery in its own transaction; the job id, or -1 with `error` set.
int64_t Enqueue(pqxx::connection& conn, int64_t channel, const std::string& payload,
                std::string& error) {
  try {
    pqxx::work tx(conn);
    int64_t id = tx.exec_prepared1("enqueue", channel, payload)[0].as<int64_t>();
    tx.commit();
    return id;
  } catch (const std::exception& e) {
    error = e.what();
    return -1;
  }
}

std::string Payload(const std::string& phase, int conversation, int seq, int64_t sent_at_us) {
  return "{\"phase\": \"" + phase + "\", \"conversation\": " + std::to_string(conversation) +
         ", \"seq\": " + std::to_string(seq) + ", \"sent_at_us\": " + std::to_string(sent_at_us) +
         ", \"text\": \"message " + std::to_string(seq) + " of conversation " +
         std::to_string(conversation) + ", about as long as a chat notification\"}";
}

}  // namespace

int64_t NowUs() {
  return std::chrono::duration_cast<std::chrono::microseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

SendReport RunConversations(const ConversationOptions& o,
                            std::chrono::system_clock::time_point start) {
  Collector collector;
  int connections = std::max(1, std::min(o.connections, o.conversations));
  int per_conversation = static_cast<int>(o.rate * static_cast<double>(o.duration.count()));
  auto period = std::chrono::duration<double>(1.0 / o.rate);
  auto stagger = period / o.conversations;
  std::vector<std::thread> threads;
  for (int c = 0; c < connections; ++c) {
    threads.emplace_back([&, c] {
      // This connection's sends, in time order: (when, conversation, seq).
      struct Send {
        std::chrono::system_clock::time_point at;
        int conversation, seq;
      };
      std::vector<Send> plan;
      for (int k = c; k < o.conversations; k += connections) {
        for (int m = 0; m < per_conversation; ++m) {
          plan.push_back({start + std::chrono::duration_cast<std::chrono::system_clock::duration>(
                                      stagger * k + period * m),
                          k, m});
        }
      }
      std::sort(plan.begin(), plan.end(), [](const Send& a, const Send& b) { return a.at < b.at; });
      std::vector<SentMessage> sent;
      int errors = 0;
      std::string first_error;
      try {
        pqxx::connection conn(o.database);
        conn.prepare("enqueue", kEnqueueSql);
        for (const Send& s : plan) {
          std::this_thread::sleep_until(s.at);
          int64_t now = NowUs();
          std::string error;
          int64_t id =
              Enqueue(conn, o.channel, Payload(o.phase, s.conversation, s.seq, now), error);
          if (id < 0) {
            if (errors++ == 0) first_error = error;
            continue;
          }
          sent.push_back({id, now, NowUs(), o.channel});
        }
      } catch (const std::exception& e) {
        if (errors++ == 0) first_error = e.what();
      }
      collector.Add(std::move(sent), errors, first_error);
    });
  }
  return collector.Finish(
      threads,
      std::chrono::duration_cast<std::chrono::microseconds>(start.time_since_epoch()).count());
}

SendReport RunSteady(const SteadyOptions& o, std::chrono::system_clock::time_point start) {
  Collector collector;
  const auto period = std::chrono::duration<double>(1.0 / o.rate);
  const auto end = start + o.duration;
  const int connections = std::max(1, o.connections);
  std::vector<std::thread> threads;
  for (int c = 0; c < connections; ++c) {
    threads.emplace_back([&, c] {
      std::vector<SentMessage> sent;
      int errors = 0;
      std::string first_error;
      std::unique_ptr<pqxx::connection> conn;
      auto next_connect = std::chrono::steady_clock::now();
      for (int64_t i = c;; i += connections) {
        auto at = start + std::chrono::duration_cast<std::chrono::system_clock::duration>(
                              period * static_cast<double>(i));
        if (at >= end) break;
        std::this_thread::sleep_until(at);
        if (o.stop != nullptr && o.stop->load()) break;
        int64_t channel = o.channels[static_cast<size_t>(i) % o.channels.size()];
        std::string error;
        int64_t id = -1;
        if (!conn && std::chrono::steady_clock::now() >= next_connect) {
          next_connect = std::chrono::steady_clock::now() + std::chrono::milliseconds(100);
          try {
            conn = std::make_unique<pqxx::connection>(o.database);
            conn->prepare("enqueue", kEnqueueSql);
          } catch (const std::exception& e) {
            conn.reset();
            error = e.what();
          }
        }
        int64_t now = NowUs();
        if (conn) {
          id = Enqueue(*conn, channel, Payload(o.phase, static_cast<int>(channel), i, now), error);
          if (id < 0) conn.reset();  // it may be broken: the next send opens a fresh one
        } else if (error.empty()) {
          error = "no connection to the database";
        }
        if (id < 0) {
          if (errors++ == 0) first_error = error;
          continue;
        }
        sent.push_back({id, now, NowUs(), channel});
      }
      collector.Add(std::move(sent), errors, first_error);
    });
  }
  return collector.Finish(
      threads,
      std::chrono::duration_cast<std::chrono::microseconds>(start.time_since_epoch()).count());
}

SendReport RunBacklog(const std::string& database, int64_t channel, int total, int concurrency) {
  Collector collector;
  int64_t started = NowUs();
  std::vector<std::thread> threads;
  for (int c = 0; c < concurrency; ++c) {
    // Connection c makes items c, c + concurrency, …: an equal share each.
    threads.emplace_back([&, c] {
      std::vector<SentMessage> sent;
      int errors = 0;
      std::string first_error;
      try {
        pqxx::connection conn(database);
        conn.prepare("enqueue", kEnqueueSql);
        for (int i = c; i < total; i += concurrency) {
          int64_t now = NowUs();
          std::string error;
          int64_t id = Enqueue(conn, channel, Payload("backlog", c, i, now), error);
          if (id < 0) {
            if (errors++ == 0) first_error = error;
            continue;
          }
          sent.push_back({id, now, NowUs(), channel});
        }
      } catch (const std::exception& e) {
        if (errors++ == 0) first_error = e.what();
      }
      collector.Add(std::move(sent), errors, first_error);
    });
  }
  return collector.Finish(threads, started);
}

}  // namespace bulkhead::load
