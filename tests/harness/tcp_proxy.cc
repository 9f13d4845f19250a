#include "tcp_proxy.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <stdexcept>
#include <string>
#include <vector>

namespace bulkhead::testing {
namespace {

sockaddr_in Loopback(int port) {
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  return addr;
}

// One accepted connection and its connection to the target.
struct Pair {
  int client = -1;
  int server = -1;
  bool closed = false;
};

// Copies what `from` has to `to`; false when `from` closed or either failed.
bool Forward(int from, int to) {
  char buffer[16384];
  ssize_t n = recv(from, buffer, sizeof(buffer), 0);
  if (n <= 0) return false;
  for (ssize_t sent = 0; sent < n;) {
    ssize_t w = send(to, buffer + sent, static_cast<size_t>(n - sent), MSG_NOSIGNAL);
    if (w <= 0) return false;
    sent += w;
  }
  return true;
}

}  // namespace

TcpProxy::TcpProxy(int target_port) : target_port_(target_port) {
  listener_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  int one = 1;
  setsockopt(listener_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  sockaddr_in addr = Loopback(0);
  if (bind(listener_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
      listen(listener_, 64) != 0 || pipe2(stop_pipe_, O_CLOEXEC) != 0) {
    throw std::runtime_error("TcpProxy: cannot listen on loopback");
  }
  socklen_t len = sizeof(addr);
  getsockname(listener_, reinterpret_cast<sockaddr*>(&addr), &len);
  port_ = ntohs(addr.sin_port);
  thread_ = std::thread([this] { Run(); });
}

TcpProxy::~TcpProxy() {
  (void)!write(stop_pipe_[1], "x", 1);
  thread_.join();
  close(listener_);
  close(stop_pipe_[0]);
  close(stop_pipe_[1]);
}

void TcpProxy::Run() {
  std::vector<Pair> pairs;
  while (true) {
    const bool stalled = stalled_.load();
    std::vector<pollfd> fds{{stop_pipe_[0], POLLIN, 0}};
    if (!stalled) fds.push_back({listener_, POLLIN, 0});
    for (const Pair& p : pairs) {
      // Stalled: nothing is read, so both sides' bytes wait in the kernel's buffers.
      fds.push_back({p.client, static_cast<short>(stalled ? 0 : POLLIN), 0});
      fds.push_back({p.server, static_cast<short>(stalled ? 0 : POLLIN), 0});
    }
    // A short timeout so that a Resume() is seen without a wake-up of its own.
    if (poll(fds.data(), fds.size(), 20) < 0) continue;
    if (fds[0].revents != 0) break;
    size_t at = 1;
    const size_t polled = pairs.size();  // a pair accepted below has no pollfd this round
    if (!stalled) {
      if (fds[at].revents & POLLIN) {
        int client = accept4(listener_, nullptr, nullptr, SOCK_CLOEXEC);
        if (client >= 0) {
          int server = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
          sockaddr_in target = Loopback(target_port_);
          if (connect(server, reinterpret_cast<sockaddr*>(&target), sizeof(target)) == 0) {
            pairs.push_back({client, server});
          } else {
            close(server);
            close(client);
          }
        }
      }
      ++at;
    }
    for (size_t i = 0; i < polled; ++i) {
      Pair& p = pairs[i];
      const pollfd& c = fds[at++];
      const pollfd& s = fds[at++];
      if (stalled) continue;
      if ((c.revents & (POLLIN | POLLHUP | POLLERR)) && !Forward(p.client, p.server)) {
        p.closed = true;
      }
      if ((s.revents & (POLLIN | POLLHUP | POLLERR)) && !Forward(p.server, p.client)) {
        p.closed = true;
      }
    }
    std::erase_if(pairs, [](Pair& p) {
      if (!p.closed) return false;
      close(p.client);
      close(p.server);
      return true;
    });
  }
  for (Pair& p : pairs) {
    close(p.client);
    close(p.server);
  }
}

}  // namespace bulkhead::testing
