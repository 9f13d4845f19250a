#include "tcp_listen.h"

#include <boost/asio/io_context.hpp>
#include <stdexcept>

namespace bulkhead {

int ListenOn(boost::asio::ip::tcp::acceptor& acceptor, const std::string& listen) {
  using boost::asio::ip::tcp;
  const size_t colon = listen.rfind(':');
  std::string host = listen.substr(0, colon);
  const std::string port = colon == std::string::npos ? "" : listen.substr(colon + 1);
  if (host.size() >= 2 && host.front() == '[') host = host.substr(1, host.size() - 2);
  try {
    tcp::resolver resolver(acceptor.get_executor());
    const tcp::endpoint endpoint =
        resolver.resolve(host, port, tcp::resolver::passive).begin()->endpoint();
    acceptor.open(endpoint.protocol());
    acceptor.set_option(boost::asio::socket_base::reuse_address(true));
    acceptor.bind(endpoint);
    acceptor.listen();
    return acceptor.local_endpoint().port();
  } catch (const std::exception& e) {
    throw std::runtime_error("cannot listen on " + listen + ": " + e.what());
  }
}

}  // namespace bulkhead
