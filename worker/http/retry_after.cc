#include "retry_after.h"

#include <array>
#include <cstdint>

namespace bulkhead {
namespace {

constexpr std::array<std::string_view, 7> kDayNames = {"Mon", "Tue", "Wed", "Thu",
                                                       "Fri", "Sat", "Sun"};
constexpr std::array<std::string_view, 7> kLongDayNames = {
    "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"};
constexpr std::array<std::string_view, 12> kMonths = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                                      "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};

bool IsDigit(char c) { return c >= '0' && c <= '9'; }

// Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's days_from_civil): plain
// integer arithmetic, unlike timegm, which is neither standard nor free of the TZ environment.
int64_t DaysFromCivil(int64_t y, int64_t m, int64_t d) {
  y -= m <= 2 ? 1 : 0;
  const int64_t era = (y >= 0 ? y : y - 399) / 400;
  const int64_t yoe = y - era * 400;
  const int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  const int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + doe - 719468;
}

// The year (UTC) of a count of days since 1970-01-01 (the inverse, year part only).
int64_t YearOfDays(int64_t z) {
  z += 719468;
  const int64_t era = (z >= 0 ? z : z - 146096) / 146097;
  const int64_t doe = z - era * 146097;
  const int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
  const int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
  const int64_t mp = (5 * doy + 2) / 153;
  return yoe + era * 400 + (mp >= 10 ? 1 : 0);
}

bool IsLeap(int64_t y) { return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0; }

int DaysInMonth(int64_t y, int m) {
  constexpr int kDays[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  return m == 2 && IsLeap(y) ? 29 : kDays[m - 1];
}

// A cursor over the value: each step consumes what it matches, or fails and leaves `ok` false
// for good, so a parse is a straight sequence of steps checked once at the end.
class Cursor {
 public:
  explicit Cursor(std::string_view s) : s_(s) {}

  bool ok() const { return ok_; }
  bool done() const { return ok_ && s_.empty(); }

  void Literal(std::string_view text) {
    if (!ok_ || !s_.starts_with(text)) {
      ok_ = false;
      return;
    }
    s_.remove_prefix(text.size());
  }

  // Exactly `n` digits (n <= 4), as a number.
  int Digits(size_t n) {
    if (!ok_ || s_.size() < n) {
      ok_ = false;
      return 0;
    }
    int value = 0;
    for (size_t i = 0; i < n; ++i) {
      if (!IsDigit(s_[i])) {
        ok_ = false;
        return 0;
      }
      value = value * 10 + (s_[i] - '0');
    }
    s_.remove_prefix(n);
    return value;
  }

  // One of `names`, returning its index (0-based); -1 after a failure.
  template <size_t N>
  int OneOf(const std::array<std::string_view, N>& names) {
    if (!ok_) return -1;
    for (size_t i = 0; i < N; ++i) {
      if (s_.starts_with(names[i])) {
        s_.remove_prefix(names[i].size());
        return static_cast<int>(i);
      }
    }
    ok_ = false;
    return -1;
  }

 private:
  std::string_view s_;
  bool ok_ = true;
};

struct Civil {
  int64_t year = 0;
  int month = 0;  // 1..12
  int day = 0;
  int hour = 0, minute = 0, second = 0;
};

// "HH:MM:SS"
void ReadTime(Cursor& c, Civil& t) {
  t.hour = c.Digits(2);
  c.Literal(":");
  t.minute = c.Digits(2);
  c.Literal(":");
  t.second = c.Digits(2);
}

// Seconds since the epoch of a date whose fields are in range; nullopt if one is not.
std::optional<int64_t> EpochSeconds(const Civil& t) {
  if (t.month < 1 || t.month > 12 || t.day < 1 || t.day > DaysInMonth(t.year, t.month) ||
      t.hour > 23 || t.minute > 59 || t.second > 60) {  // 60: a leap second
    return std::nullopt;
  }
  return DaysFromCivil(t.year, t.month, t.day) * 86400 + t.hour * 3600 + t.minute * 60 + t.second;
}

// IMF-fixdate: "Sun, 06 Nov 1994 08:49:37 GMT"
std::optional<Civil> ImfFixdate(std::string_view v) {
  Cursor c(v);
  Civil t;
  c.OneOf(kDayNames);
  c.Literal(", ");
  t.day = c.Digits(2);
  c.Literal(" ");
  t.month = c.OneOf(kMonths) + 1;
  c.Literal(" ");
  t.year = c.Digits(4);
  c.Literal(" ");
  ReadTime(c, t);
  c.Literal(" GMT");
  if (!c.done()) return std::nullopt;
  return t;
}

// RFC 850: "Sunday, 06-Nov-94 08:49:37 GMT"; the century is decided by the caller.
std::optional<Civil> Rfc850(std::string_view v) {
  Cursor c(v);
  Civil t;
  c.OneOf(kLongDayNames);
  c.Literal(", ");
  t.day = c.Digits(2);
  c.Literal("-");
  t.month = c.OneOf(kMonths) + 1;
  c.Literal("-");
  t.year = c.Digits(2);
  c.Literal(" ");
  ReadTime(c, t);
  c.Literal(" GMT");
  if (!c.done()) return std::nullopt;
  return t;
}

// asctime: "Sun Nov  6 08:49:37 1994" (the day is two digits, or a space and one digit).
std::optional<Civil> Asctime(std::string_view v) {
  Cursor c(v);
  Civil t;
  c.OneOf(kDayNames);
  c.Literal(" ");
  t.month = c.OneOf(kMonths) + 1;
  c.Literal(" ");
  if (c.ok() && v.size() > 8 && v[8] == ' ') {
    c.Literal(" ");
    t.day = c.Digits(1);
  } else {
    t.day = c.Digits(2);
  }
  c.Literal(" ");
  ReadTime(c, t);
  c.Literal(" ");
  t.year = c.Digits(4);
  if (!c.done()) return std::nullopt;
  return t;
}

std::string_view TrimSpaces(std::string_view v) {
  while (!v.empty() && (v.front() == ' ' || v.front() == '\t')) v.remove_prefix(1);
  while (!v.empty() && (v.back() == ' ' || v.back() == '\t')) v.remove_suffix(1);
  return v;
}

}  // namespace

std::optional<std::chrono::seconds> ParseRetryAfter(std::string_view value,
                                                    std::chrono::system_clock::time_point now) {
  value = TrimSpaces(value);
  if (value.empty()) return std::nullopt;
  const int64_t max = kMaxRetryAfter.count();

  if (IsDigit(value.front())) {
    // delta-seconds. Stops as soon as the value passes the maximum: no overflow, however
    // many digits follow (they must still all be digits to count as delta-seconds at all).
    int64_t seconds = 0;
    bool absurd = false;
    for (char ch : value) {
      if (!IsDigit(ch)) return std::nullopt;
      if (!absurd) {
        seconds = seconds * 10 + (ch - '0');
        absurd = seconds > max;
      }
    }
    if (absurd) return std::nullopt;
    return std::chrono::seconds(seconds);
  }

  const int64_t now_s = std::chrono::floor<std::chrono::seconds>(now.time_since_epoch()).count();
  std::optional<Civil> date;
  if (value.size() > 3 && value[3] == ',') {
    date = ImfFixdate(value);
  } else if (value.find(',') != std::string_view::npos) {
    date = Rfc850(value);
    if (date) {
      // RFC 9110 §5.6.7: a two-digit year more than 50 years ahead is the most recent past
      // year with those digits.
      int64_t now_year = YearOfDays(now_s >= 0 ? now_s / 86400 : (now_s - 86399) / 86400);
      int64_t year = now_year - (now_year % 100 + 100) % 100 + date->year;
      if (year > now_year + 50) year -= 100;
      date->year = year;
    }
  } else {
    date = Asctime(value);
  }
  if (!date) return std::nullopt;
  std::optional<int64_t> at = EpochSeconds(*date);
  if (!at) return std::nullopt;
  const int64_t delta = *at - now_s;
  if (delta <= 0) return std::chrono::seconds(0);
  if (delta > max) return std::nullopt;
  return std::chrono::seconds(delta);
}

}  // namespace bulkhead
