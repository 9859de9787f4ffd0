// The event stream's queue sink: the message attributes it derives from an event.
#include <gtest/gtest.h>

#include "adapters/notify/queue_event_sink.hpp"

using namespace ingestd;
using attributes = std::vector<std::pair<std::string, std::string>>;

TEST(event_attributes, are_the_type_tenant_and_document_of_the_event) {
  EXPECT_EQ(
      event_attributes(R"({"id":"e1","type":"INGESTION_COMPLETED","tenant_id":"t1",)"
                       R"("document_id":"d1","ingestion_id":"i1","payload":{}})"),
      (attributes{{"type", "INGESTION_COMPLETED"}, {"tenant_id", "t1"}, {"document_id", "d1"}}));
}

TEST(event_attributes, of_a_batch_s_event_name_the_batch) {
  EXPECT_EQ(event_attributes(R"({"type":"BATCH_FINISHED","tenant_id":"t1","document_id":null,)"
                             R"("payload":{"batch_id":"b1","documents":3}})"),
            (attributes{{"type", "BATCH_FINISHED"}, {"tenant_id", "t1"}, {"batch_id", "b1"}}));
  EXPECT_EQ(event_attributes(R"({"type":"WARNING","payload":{"batch_id":7}})"),
            (attributes{{"type", "WARNING"}}));
}

TEST(event_attributes, leave_out_what_is_null_empty_or_not_a_string) {
  // A worker's events have no tenant or document.
  EXPECT_EQ(event_attributes(R"({"type":"WORKER_STARTED","tenant_id":null,"document_id":""})"),
            (attributes{{"type", "WORKER_STARTED"}}));
  EXPECT_EQ(event_attributes(R"({"type":7,"tenant_id":["t"]})"), attributes{});
}

TEST(event_attributes, of_a_body_that_is_not_an_object_are_none) {
  EXPECT_EQ(event_attributes(""), attributes{});
  EXPECT_EQ(event_attributes("[1,2]"), attributes{});
  EXPECT_EQ(event_attributes(R"({"type":"INGESTION_QUEUED")"), attributes{});
}
