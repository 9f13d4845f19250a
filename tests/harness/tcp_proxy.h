// TcpProxy: a TCP forwarder on loopback that a test can stall, to put between a node and
// PostgreSQL and make the database stop answering without stopping it.
//
// Listens on 127.0.0.1:port() and forwards every accepted connection to `target_port` on
// 127.0.0.1, both ways. Stall() stops forwarding: bytes each side sends are accepted by the
// proxy's kernel and then held, so the sender's writes succeed and its reads wait — a database
// that does not answer, as a black-holing failover looks to a statement already sent (unlike a
// real black hole, the kernel still acknowledges, so tcp_user_timeout and keepalives do not
// fire). New connections are accepted and held too. Resume() forwards again, held bytes first.
//
// Threads: one of its own, which owns every socket; Stall() and Resume() from any thread. The
// destructor stops the thread and closes every connection.
#pragma once

#include <atomic>
#include <thread>

namespace bulkhead::testing {

class TcpProxy {
 public:
  explicit TcpProxy(int target_port);
  ~TcpProxy();
  TcpProxy(const TcpProxy&) = delete;
  TcpProxy& operator=(const TcpProxy&) = delete;

  int port() const { return port_; }
  void Stall() { stalled_ = true; }
  void Resume() { stalled_ = false; }

 private:
  void Run();

  const int target_port_;
  int listener_ = -1;
  int port_ = 0;
  int stop_pipe_[2] = {-1, -1};
  std::atomic<bool> stalled_{false};
  std::thread thread_;  // started last
};

}  // namespace bulkhead::testing
