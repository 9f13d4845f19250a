#include "http_exchange.h"

namespace bulkhead {

std::string_view HttpErrorName(HttpError error) {
  switch (error) {
    case HttpError::kNone:
      return "none";
    case HttpError::kTimeout:
      return "timeout";
    case HttpError::kConnect:
      return "connect";
    case HttpError::kDns:
      return "dns";
    case HttpError::kTls:
      return "tls";
    case HttpError::kBlocked:
      return "blocked";
    case HttpError::kProtocol:
      return "protocol";
    case HttpError::kCancelled:
      return "cancelled";
    case HttpError::kOther:
      return "other";
  }
  return "other";
}

}  // namespace bulkhead
