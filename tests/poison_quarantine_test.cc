// PoisonQuarantine: an item refused for its data is written once more with its text made
// storable and counted as recorded; refused again, it is dropped; a retry that fails for the
// database's sake is thrown back to the caller (which keeps the item) and counts nothing. The
// store is a lambda here: the writer's and the keeper's tests run the real statements.
#include "poison_quarantine.h"

#include <gtest/gtest.h>

#include <pqxx/pqxx>
#include <string>

#include "storable_text.h"

namespace bulkhead {
namespace {

PoisonQuarantine::Options BreakerOptions(Metrics* metrics) {
  PoisonQuarantine::Options options;
  options.event = "breaker_request_quarantined";
  options.text = "text";
  options.writer = Metrics::QuarantineWriter::kBreaker;
  options.metrics = metrics;
  options.recorded_detail = "made with the text made storable";
  options.dropped_detail = "dropped";
  return options;
}

const pqxx::data_exception kNotUtf8("invalid byte sequence for encoding \"UTF8\": 0xff\nmore", "",
                                    "22021");

TEST(PoisonQuarantine, AnItemWrittenAgainWithItsTextMadeStorableIsRecorded) {
  Metrics metrics("test");
  PoisonQuarantine quarantine(BreakerOptions(&metrics));
  const std::string text = "bad \xff byte";
  std::string written;
  testing::internal::CaptureStderr();
  bool recorded = quarantine.Take(kNotUtf8, text, {{"channel", 7}},
                                  [&](const std::string& storable) { written = storable; });
  const std::string log = testing::internal::GetCapturedStderr();
  EXPECT_TRUE(recorded);
  EXPECT_EQ(written,
            StorableText(text) + " [the original text could not be stored: SQLSTATE 22021]");
  EXPECT_EQ(quarantine.count(), 1u);
  const std::string scrape = metrics.Scrape();
  EXPECT_NE(scrape.find(R"(bulkhead_quarantined_total{outcome="recorded",writer="breaker"} 1)"),
            std::string::npos);
  EXPECT_NE(scrape.find(R"(bulkhead_quarantined_total{outcome="dropped",writer="breaker"} 0)"),
            std::string::npos);
  for (const char* field : {R"("event":"breaker_request_quarantined")", R"("level":"error")",
                            R"("channel":7)", R"("sqlstate":"22021")", R"("outcome":"recorded")",
                            R"("detail":"made with the text made storable")"}) {
    EXPECT_NE(log.find(field), std::string::npos) << field << " in " << log;
  }
  EXPECT_EQ(log.find("retry_error"), std::string::npos);
  EXPECT_EQ(log.find("more"), std::string::npos);  // the error's first line only
}

TEST(PoisonQuarantine, AnItemRefusedEvenWithItsTextMadeStorableIsDropped) {
  Metrics metrics("test");
  PoisonQuarantine quarantine(BreakerOptions(&metrics));
  testing::internal::CaptureStderr();
  bool recorded = quarantine.Take(kNotUtf8, "x", {}, [](const std::string&) {
    throw pqxx::data_exception("value too long", "", "22001");
  });
  const std::string log = testing::internal::GetCapturedStderr();
  EXPECT_FALSE(recorded);
  EXPECT_EQ(quarantine.count(), 1u);
  EXPECT_NE(
      metrics.Scrape().find(R"(bulkhead_quarantined_total{outcome="dropped",writer="breaker"} 1)"),
      std::string::npos);
  EXPECT_NE(log.find(R"("outcome":"dropped")"), std::string::npos) << log;
  EXPECT_NE(log.find(R"("retry_error":"value too long")"), std::string::npos) << log;
  EXPECT_NE(log.find(R"("detail":"dropped")"), std::string::npos) << log;
}

TEST(PoisonQuarantine, ARetryTheDatabaseFailsIsThrownToTheCallerAndCountsNothing) {
  Metrics metrics("test");
  PoisonQuarantine quarantine(BreakerOptions(&metrics));
  EXPECT_THROW(quarantine.Take(kNotUtf8, "x", {},
                               [](const std::string&) {
                                 throw pqxx::broken_connection("server closed the connection");
                               }),
               pqxx::broken_connection);
  EXPECT_EQ(quarantine.count(), 0u);
  EXPECT_NE(
      metrics.Scrape().find(R"(bulkhead_quarantined_total{outcome="dropped",writer="breaker"} 0)"),
      std::string::npos);
}

TEST(PoisonQuarantine, AFailureWithoutASqlStateLeavesItOutOfTheNote) {
  PoisonQuarantine::Options options = BreakerOptions(nullptr);
  options.text = "error text";
  PoisonQuarantine quarantine(options);
  std::string written;
  try {
    (void)nlohmann::json("\xff").dump();  // a text that is not UTF-8 cannot even be encoded
    FAIL() << "nlohmann::json encoded a text that is not UTF-8";
  } catch (const nlohmann::json::exception& e) {
    testing::internal::CaptureStderr();
    quarantine.Take(e, "boom", {}, [&](const std::string& storable) { written = storable; });
    testing::internal::GetCapturedStderr();
  }
  EXPECT_EQ(written, "boom [the original error text could not be stored]");
}

}  // namespace
}  // namespace bulkhead
