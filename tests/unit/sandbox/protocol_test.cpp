// The decoder protocol (adapters/sandbox/protocol.hpp): frames on a pipe, their maximum size,
// the request and answer envelopes, the kinds' parameters and answers, and malformed input.
#include <gtest/gtest.h>

#include <cerrno>
#include <fcntl.h>
#include <thread>
#include <unistd.h>

#include "adapters/sandbox/protocol.hpp"
#include "adapters/sandbox/wire.hpp"

using namespace ingestd;
using namespace ingestd::sandbox;

namespace {

struct pipe_pair {
  int r = -1, w = -1;
  pipe_pair() {
    int fds[2];
    EXPECT_EQ(::pipe2(fds, O_CLOEXEC), 0);
    r = fds[0];
    w = fds[1];
  }
  ~pipe_pair() {
    close_write();
    if (r >= 0)
      ::close(r);
  }
  void close_write() {
    if (w >= 0)
      ::close(w);
    w = -1;
  }
  void raw(std::string_view bytes) const {
    ASSERT_EQ(::write(w, bytes.data(), bytes.size()), static_cast<ssize_t>(bytes.size()));
  }
};

std::string le32(uint32_t n) {
  std::string s(4, '\0');
  for (int i = 0; i < 4; ++i)
    s[static_cast<size_t>(i)] = static_cast<char>((n >> (8 * i)) & 0xff);
  return s;
}

} // namespace

TEST(SandboxFrames, RoundTripOnAPipe) {
  pipe_pair p;
  ASSERT_EQ(write_frame(p.w, "hello", 64), io_status::ok);
  std::string out;
  ASSERT_EQ(read_frame(p.r, 64, out), io_status::ok);
  EXPECT_EQ(out, "hello");
}

TEST(SandboxFrames, AFrameLargerThanThePipeGoesThroughWhileItIsRead) {
  pipe_pair p;
  std::string big(3u << 20, 'x');
  big[12345] = 'y';
  std::thread writer{[&] { EXPECT_EQ(write_frame(p.w, big, 4u << 20), io_status::ok); }};
  std::string out;
  EXPECT_EQ(read_frame(p.r, 4u << 20, out), io_status::ok);
  writer.join();
  EXPECT_EQ(out, big);
}

TEST(SandboxFrames, WriteRefusesAnEmptyOrOversizedPayloadAndWritesNothing) {
  pipe_pair p;
  EXPECT_EQ(write_frame(p.w, "", 64), io_status::too_large);
  EXPECT_EQ(write_frame(p.w, std::string(65, 'a'), 64), io_status::too_large);
  p.close_write();
  std::string out;
  EXPECT_EQ(read_frame(p.r, 64, out), io_status::closed);
}

TEST(SandboxFrames, ReadRefusesALengthAboveTheMaximumBeforeReadingIt) {
  pipe_pair p;
  // Declares 4 GiB - 1: refused from the length alone, nothing allocated.
  p.raw(le32(UINT32_MAX));
  std::string out;
  EXPECT_EQ(read_frame(p.r, 1u << 20, out), io_status::too_large);
  EXPECT_TRUE(out.empty());
  EXPECT_LT(out.capacity(), 1024u);
}

TEST(SandboxFrames, ReadRefusesAZeroLength) {
  pipe_pair p;
  p.raw(le32(0));
  std::string out;
  EXPECT_EQ(read_frame(p.r, 64, out), io_status::too_large);
}

TEST(SandboxFrames, ATruncatedFrameIsClosedNotOk) {
  // Half a length, then a length with less payload than it announces.
  for (const std::string& partial : {std::string{"\x05\x00", 2}, le32(10) + "abc"}) {
    pipe_pair p;
    p.raw(partial);
    p.close_write();
    std::string out;
    EXPECT_EQ(read_frame(p.r, 64, out), io_status::closed) << partial.size();
  }
}

TEST(SandboxFrames, ReadTimesOutAtTheDeadline) {
  pipe_pair p;
  ::fcntl(p.r, F_SETFL, ::fcntl(p.r, F_GETFL) | O_NONBLOCK);
  p.raw(le32(8) + "abc"); // 5 bytes short, and nobody writes them
  std::string out;
  auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds{20};
  EXPECT_EQ(read_frame(p.r, 64, out, deadline), io_status::timeout);
}

TEST(SandboxFrames, WriteToAClosedReaderIsClosed) {
  ::signal(SIGPIPE, SIG_IGN);
  pipe_pair p;
  ::close(p.r);
  p.r = -1;
  EXPECT_EQ(write_frame(p.w, "x", 64), io_status::closed);
}

TEST(SandboxFrames, WriteRequestSendsTheSameFrameAsEncodeRequest) {
  pipe_pair p;
  request_view v{static_cast<uint8_t>(request_kind::render_page), 1234, "params", "the bytes"};
  ASSERT_EQ(write_request(p.w, v, 1024), io_status::ok);
  std::string out;
  ASSERT_EQ(read_frame(p.r, 1024, out), io_status::ok);
  EXPECT_EQ(out, encode_request(v));
  auto back = decode_request(out);
  ASSERT_TRUE(back) << back.error().describe();
  EXPECT_EQ(back->kind, static_cast<uint8_t>(request_kind::render_page));
  EXPECT_EQ(back->timeout_ms, 1234u);
  EXPECT_EQ(back->params, "params");
  EXPECT_EQ(back->bytes, "the bytes");
  // Over the maximum: nothing is written.
  EXPECT_EQ(write_request(p.w, v, 20), io_status::too_large);
}

TEST(SandboxEnvelopes, RequestsOfAnotherVersionOrMalformedAreRefused) {
  auto good = encode_request(request{1, 10, "p", "b"});
  ASSERT_TRUE(decode_request(good));
  auto other = good;
  other[0] = static_cast<char>(protocol_version + 1);
  EXPECT_EQ(decode_request(other).error().code, "decode.protocol");
  EXPECT_FALSE(decode_request(""));
  EXPECT_FALSE(decode_request(good.substr(0, 5)));
  // A parameter length beyond the payload.
  auto lying = good;
  lying[6] = '\x7f';
  EXPECT_FALSE(decode_request(lying));
  // Kind 0 is no kind.
  EXPECT_FALSE(decode_request(encode_request(request{0, 10, "", ""})));
}

TEST(SandboxEnvelopes, AnswersRoundTripAndAreChecked) {
  answer ok;
  ok.body = "body";
  ok.retiring = true;
  auto back = decode_answer(encode_answer(ok));
  ASSERT_TRUE(back);
  EXPECT_EQ(back->status, answer_status::ok);
  EXPECT_TRUE(back->retiring);
  EXPECT_EQ(back->body, "body");

  answer bad;
  bad.status = answer_status::error;
  bad.err = error::make_permanent("ocr.corrupt_file", "damaged");
  back = decode_answer(encode_answer(bad));
  ASSERT_TRUE(back);
  EXPECT_EQ(back->status, answer_status::error);
  EXPECT_EQ(back->err.code, "ocr.corrupt_file");
  EXPECT_TRUE(back->err.permanent());

  auto payload = encode_answer(bad);
  auto wrong_class = payload;
  wrong_class[3] = '\x09';
  EXPECT_FALSE(decode_answer(wrong_class));
  auto trailing = payload + "x";
  EXPECT_FALSE(decode_answer(trailing));
  auto wrong_status = payload;
  wrong_status[1] = '\x07';
  EXPECT_FALSE(decode_answer(wrong_status));
}

TEST(SandboxKinds, PageRequestAndAnswerRoundTrip) {
  page_request req;
  req.mime_type = "application/pdf";
  req.index = 3;
  req.options.tesseract.languages = "eng";
  req.options.limits.max_pages = 7;
  req.options.quality_threshold = 0.42;
  req.options.allow_preprocessing = false;
  auto r = decode_page_request(encode(req));
  ASSERT_TRUE(r);
  EXPECT_EQ(r->mime_type, "application/pdf");
  EXPECT_EQ(r->index, 3);
  EXPECT_EQ(r->options.tesseract.languages, "eng");
  EXPECT_EQ(r->options.limits.max_pages, 7);
  EXPECT_DOUBLE_EQ(r->options.quality_threshold, 0.42);
  EXPECT_FALSE(r->options.allow_preprocessing);

  page_answer a;
  a.kind = file_kind::tiff;
  a.page_count = 2;
  a.outcome.page.number = 1;
  a.outcome.page.text = "Invoice 42";
  a.outcome.page.quality_score = 0.9;
  a.outcome.page.defects = {{"blurry", 0.5}};
  a.outcome.page.words = {{"Invoice", 0.1F, 0.2F, 0.3F, 0.25F}, {"42", 0.32F, 0.2F, 0.36F, 0.25F}};
  a.outcome.preprocessed = true;
  a.outcome.image = gray_pixels{2, 3, "abcdef"};
  a.metadata = {{"title", "Rechnung 7"}, {"created", "2026-03-01T10:00:00Z"}};
  auto back = decode_page_answer(encode(a));
  ASSERT_TRUE(back);
  EXPECT_EQ(back->kind, file_kind::tiff);
  EXPECT_EQ(back->page_count, 2);
  EXPECT_EQ(back->outcome.page.text, "Invoice 42");
  ASSERT_EQ(back->outcome.page.defects.size(), 1u);
  EXPECT_EQ(back->outcome.page.defects[0].type, "blurry");
  ASSERT_EQ(back->outcome.page.words.size(), 2u);
  EXPECT_EQ(back->outcome.page.words[1].text, "42");
  EXPECT_FLOAT_EQ(back->outcome.page.words[1].left, 0.32F);
  EXPECT_FLOAT_EQ(back->outcome.page.words[1].bottom, 0.25F);
  EXPECT_EQ(back->outcome.image.pixels, "abcdef");
  EXPECT_EQ(back->metadata, a.metadata);

  // Metadata past its bounds, or that a text column would refuse, is malformed.
  for (const document_metadata& bad :
       {document_metadata(max_metadata_entries + 1, {"title", "x"}),
        document_metadata{{"title", std::string(max_metadata_value_bytes + 1, 'x')}},
        document_metadata{{std::string(33, 'k'), "x"}}, document_metadata{{"", "x"}},
        document_metadata{{"title", std::string{"a\0b", 3}}},
        document_metadata{{"title", "\xff"}}}) {
    auto hostile = a;
    hostile.metadata = bad;
    EXPECT_FALSE(decode_page_answer(encode(hostile)));
  }

  // A word off the page, or longer than a word may be, is malformed.
  for (const page_word& bad : {page_word{"x", -0.1F, 0, 1, 1}, page_word{"x", 0, 0, 1.5F, 1},
                               page_word{std::string(max_word_bytes + 1, 'x'), 0, 0, 1, 1}}) {
    auto hostile = a;
    hostile.outcome.page.words = {bad};
    EXPECT_FALSE(decode_page_answer(encode(hostile)));
  }

  // An image whose size does not match its width and height is malformed.
  a.outcome.image = gray_pixels{2, 2, "abcdef"};
  EXPECT_FALSE(decode_page_answer(encode(a)));
  // A negative page index.
  req.index = -1;
  EXPECT_FALSE(decode_page_request(encode(req)));
}

TEST(SandboxKinds, UnpackedRoundTripsAndHostileCountsFail) {
  unpacked u;
  u.members = {{"a/b.pdf", "%PDF-1.4"}, {"c.png", std::string(10, '\0')}};
  u.body_text = "body";
  u.subject = "Invoice";
  u.problems = {"one"};
  auto back = decode_unpacked(encode(u));
  ASSERT_TRUE(back);
  ASSERT_EQ(back->members.size(), 2u);
  EXPECT_EQ(back->members[0].name, "a/b.pdf");
  EXPECT_EQ(back->members[1].bytes.size(), 10u);
  EXPECT_EQ(back->subject, "Invoice");
  ASSERT_EQ(back->problems.size(), 1u);

  // A member count far beyond what the bytes could hold fails without reserving for it.
  wire_writer w;
  w.u32(0x7fffffff);
  EXPECT_FALSE(decode_unpacked(w.take()));
}

TEST(SandboxKinds, RenderAndUnpackParametersAreBounded) {
  render_request r{"application/pdf", 0, 110, 1800};
  ASSERT_TRUE(decode_render_request(encode(r)));
  r.dpi = 100000;
  EXPECT_FALSE(decode_render_request(encode(r)));
  unpack_params u;
  u.kind = container_kind::mbox;
  ASSERT_TRUE(decode_unpack_params(encode(u)));
  auto bad = encode(u);
  bad[0] = '\x09';
  EXPECT_FALSE(decode_unpack_params(bad));
  page_image img{"png bytes", "image/png", 3};
  auto back = decode_page_image(encode(img));
  ASSERT_TRUE(back);
  EXPECT_EQ(back->bytes, "png bytes");
  EXPECT_EQ(back->page_count, 3);
}

TEST(SandboxWire, EveryPrefixOfAMessageFailsToDecode) {
  page_answer a;
  a.page_count = 1;
  a.outcome.page.text = "text";
  a.metadata = {{"producer", "p"}};
  auto full = encode(a);
  for (size_t n = 0; n < full.size(); ++n)
    EXPECT_FALSE(decode_page_answer(full.substr(0, n))) << n;
}
