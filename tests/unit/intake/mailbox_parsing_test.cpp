// What mailbox intake reads from a server and a message, without a server: the UIDs of a SEARCH
// answer, a folder name quoted for a command and taken from a URL, the IDLE lines that say a
// folder changed, and a message's Message-ID (folded, without brackets, only from the header).
#include <gtest/gtest.h>

#include "adapters/mail/imap_mailbox.hpp"
#include "intake/mailbox_intake.hpp"

namespace ingestd {
namespace {

TEST(mailbox_parsing, a_search_answer_gives_its_uids_in_order_once) {
  EXPECT_EQ(parse_search("* SEARCH 3 1 20\r\n"), (std::vector<uint64_t>{1, 3, 20}));
  EXPECT_EQ(parse_search("* FLAGS (\\Seen)\r\n* SEARCH 7\r\n* SEARCH 7 8\r\n"),
            (std::vector<uint64_t>{7, 8}));
  EXPECT_TRUE(parse_search("* SEARCH\r\n").empty());
  EXPECT_TRUE(parse_search("* 3 EXISTS\r\n").empty());
  EXPECT_EQ(parse_search("* SEARCH 4 x 5\r\n"), (std::vector<uint64_t>{4}));
}

TEST(mailbox_parsing, a_folder_is_quoted_for_a_command) {
  EXPECT_EQ(imap_quoted("Processed"), "\"Processed\"");
  EXPECT_EQ(imap_quoted("A \"b\" \\ c"), "\"A \\\"b\\\" \\\\ c\"");
  EXPECT_EQ(imap_quoted("x\r\nLOGOUT"), "\"xLOGOUT\"") << "no line break reaches the server";
}

TEST(mailbox_parsing, the_folder_comes_from_the_url_decoded) {
  EXPECT_EQ(imap_folder("imaps://mail.example:993/INBOX"), "INBOX");
  EXPECT_EQ(imap_folder("imap://mail.example/Scans%20In"), "Scans In");
  EXPECT_EQ(imap_folder("imaps://mail.example/Invoices/2026;UIDVALIDITY=7"), "Invoices/2026");
  EXPECT_EQ(imap_folder("imaps://mail.example/"), "INBOX");
  EXPECT_EQ(imap_folder("imaps://mail.example"), "INBOX");
}

TEST(mailbox_parsing, idle_news_is_a_message_that_came_went_or_changed) {
  for (const auto* line :
       {"* 3 EXISTS", "* 12 EXPUNGE", "* 4 RECENT", "* 5 FETCH (FLAGS (\\Seen))"})
    EXPECT_TRUE(imap_folder_changed(line)) << line;
  for (const auto* line : {"* OK Still here", "+ idling", "i3 OK Idle completed", "* EXISTS",
                           "* 3 EXISTSX", "* x3 EXISTS", "* 3", "", "* BYE shutting down"})
    EXPECT_FALSE(imap_folder_changed(line)) << line;
}

TEST(mailbox_parsing, the_message_id_comes_from_the_header_only) {
  EXPECT_EQ(message_id_of("From: a@b\r\nMessage-ID: <x1@b.example>\r\n\r\nbody"), "x1@b.example");
  EXPECT_EQ(message_id_of("message-id:\r\n  <folded@b.example>\r\nSubject: s\r\n\r\n"),
            "folded@b.example");
  EXPECT_EQ(message_id_of("Subject: s\r\n\r\nMessage-ID: <in-body@b.example>\r\n"), "");
  EXPECT_EQ(message_id_of("X-Message-ID: <other@b.example>\r\n\r\n"), "");
  EXPECT_EQ(message_id_of("Message-ID: bare-id\n\n"), "bare-id");
  EXPECT_EQ(message_id_of("\x01\x02 not a message"), "");
}

} // namespace
} // namespace ingestd
