#include "serve.hpp"

#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <map>
#include <memory>
#include <optional>
#include <sstream>
#include <thread>

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

#include "quern/error.hpp"
#include "tables.hpp"

namespace quern::board {

namespace {

namespace beast = boost::beast;
namespace http = beast::http;
namespace asio = boost::asio;
using tcp = asio::ip::tcp;
namespace fs = std::filesystem;

/// The log directory as last read, kept as each run's bounded report
/// (logdir.hpp): a file that grew is read on from where reading stopped; a
/// run whose files changed otherwise is read again. The directory is scanned
/// at most once per `rescan` (not per request).
class logdir_cache {
public:
  explicit logdir_cache(serve_options opt) : opt_(std::move(opt)) {
    sel_.purge_orphaned = opt_.purge_orphaned;
    rescan_ = std::chrono::milliseconds(std::clamp(opt_.page.reload_ms / 2, 100, 1000));
  }

  /// Re-reads what changed; an error when the log directory cannot be read.
  caf::error refresh(bool force = false) {
    auto now = std::chrono::steady_clock::now();
    if (!force && scanned_ && now - last_scan_ < rescan_)
      return {};
    // A log directory not made yet has no runs yet (it is looked for again
    // at the next scan); anything else that cannot be read is an error.
    std::error_code ec;
    auto runs = !fs::exists(opt_.logdir, ec) && !ec
                    ? caf::expected<std::vector<run_files>>{std::vector<run_files>{}}
                    : find_board_runs(opt_.logdir);
    last_scan_ = std::chrono::steady_clock::now();
    if (!runs)
      return runs.error();
    scanned_ = true;
    runs_ = std::make_shared<const std::vector<run_files>>(*runs);
    // What each run needs: nothing, reading on, or reading again.
    std::map<std::string, size_t> index;
    for (size_t i = 0; i < reports_.size(); ++i)
      index[reports_[i].run] = i;
    std::vector<todo> plan;
    bool changed = runs->size() != reports_.size();
    for (auto& r : *runs) {
      auto it = index.find(r.run);
      plan.push_back(it == index.end() ? todo::again
                                       : what_changed(reports_[it->second], r));
      changed = changed || plan.back() != todo::none;
    }
    if (!changed && !data_.empty())
      return {};
    auto before = reports_;
    std::vector<run_report> next;
    next.reserve(runs->size());
    for (size_t k = 0; k < runs->size(); ++k) {
      auto& r = (*runs)[k];
      if (plan[k] == todo::again) {
        next.push_back(read_run(r, sel_, true));
        continue;
      }
      auto rep = std::move(reports_[index.at(r.run)]);
      // The last file read on from its end, new files read whole; when what
      // was added purges points read before (a restart, TB-2), the run is
      // read again: its series, thinned ones too, lose them exactly, and the
      // page gets the whole data.
      if (plan[k] == todo::more &&
          !read_more(rep, r, rep.files.size() - 1, sel_, true, true))
        rep = read_run(r, sel_, true);
      next.push_back(std::move(rep));
    }
    sort_by_start_time(next);
    reports_ = std::move(next);
    ++generation_;
    auto base = version_;
    version_ = instance_ + "-" + std::to_string(generation_);
    data_ = page_data(reports_, opt_.page, version_);
    // A page that has the previous version gets only the new points.
    delta_base_ = base;
    delta_ = base.empty() ? std::string{}
                          : page_delta(before, reports_, opt_.page, base, version_);
    return {};
  }

  /// The answer to a page that has version `have`: nothing new (empty), the
  /// new points, or all the data.
  const std::string* data_for(const std::string& have) const {
    if (have == version_)
      return nullptr;
    if (!delta_.empty() && have == delta_base_)
      return &delta_;
    return &data_;
  }

  /// The page, made for each request (not kept: it is the data again).
  std::string page() const { return render_page_with(data_, opt_.page); }
  /// The runs' files as last scanned (shared with long answers written on
  /// other threads).
  std::shared_ptr<const std::vector<run_files>> runs() const { return runs_; }

private:
  enum class todo { none, more, again };

  static int64_t mtime_of(const struct ::stat& st) {
    return int64_t{st.st_mtim.tv_sec} * 1000000000 + st.st_mtim.tv_nsec;
  }

  /// none: unchanged; more: the last file grew or files were added after
  /// it; again: anything else (the run is read again).
  static todo what_changed(const run_report& rep, const run_files& r) {
    if (rep.files.empty() || r.files.size() < rep.files.size())
      return todo::again;
    auto result = r.files.size() > rep.files.size() ? todo::more : todo::none;
    for (size_t i = 0; i < rep.files.size(); ++i) {
      auto& f = rep.files[i];
      if (f.path != r.files[i])
        return todo::again;
      struct ::stat st {};
      int64_t size = -1, mtime = 0;
      if (::stat(f.path.c_str(), &st) == 0) {
        size = st.st_size;
        mtime = mtime_of(st);
      }
      if (size == f.size && mtime == f.mtime)
        continue;
      if (i + 1 == rep.files.size() && size > f.size && f.size >= 0)
        result = todo::more;
      else
        return todo::again;
    }
    return result;
  }

  serve_options opt_;
  selection sel_;
  // Versions name this server too: a page left open from an earlier one
  // must not take a delta meant for another base.
  std::string instance_ =
      std::to_string(std::chrono::system_clock::now().time_since_epoch().count());
  std::chrono::steady_clock::duration rescan_;
  std::chrono::steady_clock::time_point last_scan_;
  bool scanned_ = false;
  std::shared_ptr<const std::vector<run_files>> runs_;
  uint64_t generation_ = 0;
  std::vector<run_report> reports_;
  std::string version_;
  std::string data_;
  std::string delta_base_;
  std::string delta_;
};

struct server {
  serve_options opt;
  logdir_cache cache;
  fs::path root; // the log directory, canonical
  unsigned short port = 0;
  /// Long answers (exports, files) being written on their own threads.
  std::shared_ptr<std::atomic<int>> streams = std::make_shared<std::atomic<int>>(0);
};

/// At most this many long answers are written at once; more get 503.
constexpr int max_streams = 8;

int hex_digit(char c) {
  if (c >= '0' && c <= '9')
    return c - '0';
  if (c >= 'a' && c <= 'f')
    return c - 'a' + 10;
  if (c >= 'A' && c <= 'F')
    return c - 'A' + 10;
  return -1;
}

/// Percent-decoding; false on a malformed escape or a NUL byte.
bool url_decode(std::string_view in, std::string& out, bool plus_is_space) {
  out.clear();
  for (size_t i = 0; i < in.size(); ++i) {
    char c = in[i];
    if (c == '%') {
      if (i + 2 >= in.size())
        return false;
      int h = hex_digit(in[i + 1]), l = hex_digit(in[i + 2]);
      if (h < 0 || l < 0)
        return false;
      c = static_cast<char>(h * 16 + l);
      i += 2;
    } else if (c == '+' && plus_is_space) {
      c = ' ';
    }
    if (c == '\0')
      return false;
    out += c;
  }
  return true;
}

/// The query's parameters; false when one is malformed.
bool parse_query(std::string_view q, std::map<std::string, std::string>& params) {
  while (!q.empty()) {
    auto amp = q.find('&');
    auto part = q.substr(0, amp);
    q = amp == std::string_view::npos ? std::string_view{} : q.substr(amp + 1);
    if (part.empty())
      continue;
    auto eq = part.find('=');
    std::string key, value;
    if (!url_decode(part.substr(0, eq), key, true))
      return false;
    if (eq != std::string_view::npos && !url_decode(part.substr(eq + 1), value, true))
      return false;
    params[key] = value;
  }
  return true;
}

using response = http::response<http::string_body>;

response text_response(http::status status, unsigned version, std::string body,
                       const std::string& type = "text/plain; charset=utf-8") {
  response res{status, version};
  res.set(http::field::server, "quern-board");
  res.set(http::field::content_type, type);
  res.set(http::field::cache_control, "no-store");
  res.set("X-Content-Type-Options", "nosniff");
  res.body() = std::move(body);
  res.keep_alive(false);
  res.prepare_payload();
  return res;
}

response error_response(http::status status, unsigned version, const std::string& why) {
  return text_response(status, version,
                       std::to_string(static_cast<unsigned>(status)) + " " +
                           std::string(http::obsolete_reason(status)) + ": " + why +
                           "\n");
}

bool host_allowed(std::string_view host, unsigned short port) {
  auto p = std::to_string(port);
  for (std::string name : {"127.0.0.1", "localhost"})
    if (host == name || host == name + ":" + p)
      return true;
  return false;
}

/// A long answer, written on its own thread as it is made (never whole in
/// memory): its type and what writes its body; false when it failed.
struct stream_job {
  std::string type;
  std::function<void(std::ostream&)> write;
};

/// What a request gets: a response, or a long answer to stream.
struct reply {
  response res;
  std::optional<stream_job> stream;
  reply(response r) : res(std::move(r)) {}
  reply(stream_job job) : stream(std::move(job)) {}
};

template <class Body>
reply handle(server& srv, const http::request<Body>& req) {
  auto v = req.version();
  if (req.method() != http::verb::get && req.method() != http::verb::head) {
    auto res = error_response(http::status::method_not_allowed, v,
                              "only GET and HEAD are served");
    res.set(http::field::allow, "GET, HEAD");
    return res;
  }
  // A page on 127.0.0.1 must not answer to other names (DNS rebinding).
  auto host_sv = req[http::field::host];
  std::string host(host_sv.data(), host_sv.size());
  if (host.empty())
    return error_response(http::status::bad_request, v, "no Host header");
  if (!host_allowed(host, srv.port))
    return error_response(http::status::forbidden, v,
                          "Host must be 127.0.0.1 or localhost, not '" +
                              std::string(host) + "'");
  auto target_sv = req.target();
  std::string_view target(target_sv.data(), target_sv.size());
  if (target.empty() || target[0] != '/')
    return error_response(http::status::bad_request, v, "the target must be a path");
  auto qpos = target.find('?');
  std::string path;
  if (!url_decode(target.substr(0, qpos), path, false))
    return error_response(http::status::bad_request, v, "malformed percent-encoding");
  std::map<std::string, std::string> params;
  if (qpos != std::string_view::npos && !parse_query(target.substr(qpos + 1), params))
    return error_response(http::status::bad_request, v, "malformed query");
  for (auto& seg : fs::path(path))
    if (seg == "..")
      return error_response(http::status::forbidden, v, "the path leaves LOGDIR");

  if (path == "/" || path == "/index.html") {
    if (auto err = srv.cache.refresh())
      return error_response(http::status::service_unavailable, v, message_of(err));
    auto res =
        text_response(http::status::ok, v, srv.cache.page(), "text/html; charset=utf-8");
    return res;
  }
  if (path == "/data") {
    if (auto err = srv.cache.refresh())
      return error_response(http::status::service_unavailable, v, message_of(err));
    auto* body = srv.cache.data_for(params["have"]);
    if (!body)
      return text_response(http::status::no_content, v, "");
    return text_response(http::status::ok, v, *body, "application/json");
  }
  if (path == "/export.csv" || path == "/export.json") {
    // The same text as `quern-board export LOGDIR [--run R] [--tag T]
    // [--format json]`, written row by row as the files are read, on its own
    // thread.
    if (auto err = srv.cache.refresh())
      return error_response(http::status::service_unavailable, v, message_of(err));
    selection sel;
    sel.purge_orphaned = srv.opt.purge_orphaned;
    if (params.count("run"))
      sel.runs.insert(params["run"]);
    if (params.count("tag"))
      sel.tags.insert(params["tag"]);
    auto runs = srv.cache.runs();
    bool json = path == "/export.json";
    return stream_job{
        json ? "application/json" : "text/csv; charset=utf-8",
        [runs, sel, json](std::ostream& out) { write_export(out, *runs, sel, json); }};
  }
  const std::string files_prefix = "/logdir/";
  if (path.compare(0, files_prefix.size(), files_prefix) == 0) {
    // A file of the log directory, as it is on disk; nothing outside it.
    std::error_code ec;
    if (srv.root.empty()) // a log directory made after serve started
      srv.root = fs::canonical(srv.opt.logdir, ec);
    if (srv.root.empty())
      return error_response(http::status::not_found, v, "no such file in LOGDIR");
    auto wanted = fs::weakly_canonical(srv.root / path.substr(files_prefix.size()), ec);
    auto rel = wanted.lexically_relative(srv.root);
    if (ec || rel.empty() || *rel.begin() == "..")
      return error_response(http::status::forbidden, v, "the path leaves LOGDIR");
    if (!fs::is_regular_file(wanted, ec))
      return error_response(http::status::not_found, v, "no such file in LOGDIR");
    auto in = std::make_shared<std::ifstream>(wanted, std::ios::binary);
    if (!*in)
      return error_response(http::status::not_found, v, "cannot open the file in LOGDIR");
    return stream_job{"application/octet-stream",
                      [in](std::ostream& out) { out << in->rdbuf(); }};
  }
  return error_response(http::status::not_found, v, "no page " + path);
}

/// An ostream's buffer that sends what is written as HTTP chunks of up to
/// 64 kB on a blocking socket.
class chunked_writer : public std::streambuf {
public:
  explicit chunked_writer(tcp::socket& socket) : socket_(socket), buf_(64 * 1024) {
    setp(buf_.data(), buf_.data() + buf_.size());
  }
  /// The last (empty) chunk: the answer is complete.
  void finish() {
    if (send_chunk() && !failed_) {
      beast::error_code ec;
      asio::write(socket_, asio::buffer("0\r\n\r\n", 5), ec);
    }
  }

protected:
  int_type overflow(int_type c) override {
    if (!send_chunk())
      return traits_type::eof();
    if (!traits_type::eq_int_type(c, traits_type::eof())) {
      *pptr() = traits_type::to_char_type(c);
      pbump(1);
    }
    return traits_type::not_eof(c);
  }
  int sync() override { return send_chunk() ? 0 : -1; }

private:
  bool send_chunk() {
    auto n = static_cast<size_t>(pptr() - pbase());
    if (failed_)
      return false;
    if (n == 0)
      return true;
    char size[32];
    auto len = std::snprintf(size, sizeof size, "%zx\r\n", n);
    std::array<asio::const_buffer, 3> parts{asio::buffer(size, static_cast<size_t>(len)),
                                            asio::buffer(buf_.data(), n),
                                            asio::buffer("\r\n", 2)};
    beast::error_code ec;
    asio::write(socket_, parts, ec);
    failed_ = static_cast<bool>(ec);
    setp(buf_.data(), buf_.data() + buf_.size());
    return !failed_;
  }

  tcp::socket& socket_;
  std::vector<char> buf_;
  bool failed_ = false;
};

class session : public std::enable_shared_from_this<session> {
public:
  session(tcp::socket socket, server& srv) : stream_(std::move(socket)), srv_(srv) {}

  void start() {
    parser_.emplace();
    parser_->header_limit(16 * 1024);
    parser_->body_limit(64 * 1024);
    // A client that sends nothing is dropped, never waited for forever.
    stream_.expires_after(std::chrono::seconds(15));
    http::async_read(
        stream_, buffer_, *parser_,
        [self = shared_from_this()](beast::error_code ec, size_t) { self->on_read(ec); });
  }

private:
  void on_read(beast::error_code ec) {
    if (ec == http::error::end_of_stream || ec == beast::error::timeout ||
        ec == asio::error::operation_aborted)
      return close();
    if (ec) {
      auto status = ec == http::error::header_limit
                        ? http::status::request_header_fields_too_large
                    : ec == http::error::body_limit ? http::status::payload_too_large
                                                    : http::status::bad_request;
      return send(error_response(status, 11, "cannot read the request: " + ec.message()),
                  false);
    }
    auto req = parser_->release();
    bool head = req.method() == http::verb::head;
    try {
      auto r = handle(srv_, req);
      if (r.stream)
        return stream(std::move(*r.stream), head);
      send(std::move(r.res), head);
    } catch (const std::bad_alloc&) {
      // A memory limit reached: said, and the server goes on.
      send(error_response(http::status::service_unavailable, req.version(),
                          "out of memory: this answer needs more memory than the "
                          "process may have (its limit was reached)"),
           head);
    }
  }

  /// Writes a long answer on its own thread (the other requests go on being
  /// answered here), chunked as it is made.
  void stream(stream_job job, bool head) {
    if (srv_.streams->fetch_add(1) >= max_streams) {
      srv_.streams->fetch_sub(1);
      return send(error_response(http::status::service_unavailable, 11,
                                 std::to_string(max_streams) +
                                     " long answers (exports, files) are being written "
                                     "already; try again when one is done"),
                  head);
    }
    auto socket = std::make_shared<tcp::socket>(stream_.release_socket());
    std::thread([socket, job = std::move(job), head, streams = srv_.streams] {
      beast::error_code ec;
      try {
        socket->non_blocking(false, ec);
        // Sends that stall for two minutes end the answer.
        struct ::timeval tv {
          120, 0
        };
        ::setsockopt(socket->native_handle(), SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
        std::string header =
            "HTTP/1.1 200 OK\r\nServer: quern-board\r\nContent-Type: " + job.type +
            "\r\nCache-Control: no-store\r\nX-Content-Type-Options: "
            "nosniff\r\nConnection: close\r\n"
            "Transfer-Encoding: chunked\r\n\r\n";
        asio::write(*socket, asio::buffer(header), ec);
        if (!ec && !head) {
          chunked_writer buf{*socket};
          std::ostream out(&buf);
          job.write(out);
          out.flush();
          buf.finish();
        }
      } catch (const std::exception&) {
        // Out of memory or a failed write: the answer ends here, cut short
        // (a chunked answer without its last chunk reads as incomplete).
      }
      socket->shutdown(tcp::socket::shutdown_send, ec);
      socket->close(ec);
      streams->fetch_sub(1);
    }).detach();
  }

  void send(response res, bool head) {
    res_ = std::make_shared<response>(std::move(res));
    // Time enough for a large page to a slow reader, not forever.
    stream_.expires_after(std::chrono::seconds(120));
    if (head) {
      // HEAD: the headers of GET (Content-Length included), no body.
      auto length = res_->body().size();
      res_->body().clear();
      res_->content_length(length);
      sr_ = std::make_shared<http::response_serializer<http::string_body>>(*res_);
      http::async_write_header(
          stream_, *sr_,
          [self = shared_from_this()](beast::error_code, size_t) { self->close(); });
      return;
    }
    http::async_write(
        stream_, *res_,
        [self = shared_from_this()](beast::error_code, size_t) { self->close(); });
  }

  void close() {
    beast::error_code ec;
    stream_.socket().shutdown(tcp::socket::shutdown_send, ec);
    stream_.close();
  }

  beast::tcp_stream stream_;
  beast::flat_buffer buffer_;
  server& srv_;
  std::optional<http::request_parser<http::string_body>> parser_;
  std::shared_ptr<response> res_;
  std::shared_ptr<http::response_serializer<http::string_body>> sr_;
};

/// Accepts connections one after another. At the descriptor limit (EMFILE,
/// ENFILE) or out of buffers, accepting again at once would fail again at
/// once and spin a core: it pauses 100 ms (said once on stderr) while the
/// open connections are served and close.
class acceptor_loop {
public:
  acceptor_loop(tcp::acceptor& acceptor, server& srv)
      : acceptor_(acceptor), srv_(srv), pause_(acceptor.get_executor()) {}

  void start() {
    acceptor_.async_accept([this](beast::error_code ec, tcp::socket socket) {
      if (ec == asio::error::operation_aborted)
        return;
      if (!ec) {
        std::make_shared<session>(std::move(socket), srv_)->start();
        return start();
      }
      if (ec == asio::error::no_descriptors || ec.value() == ENFILE ||
          ec == asio::error::no_buffer_space || ec == asio::error::no_memory) {
        if (!said_) {
          std::cerr << "quern-board: cannot accept a connection: " << ec.message()
                    << " (open connections are served; accepting again every 100 ms)"
                    << std::endl;
          said_ = true;
        }
        pause_.expires_after(std::chrono::milliseconds(100));
        pause_.async_wait([this](beast::error_code e) {
          if (e != asio::error::operation_aborted)
            start();
        });
        return;
      }
      start();
    });
  }

private:
  tcp::acceptor& acceptor_;
  server& srv_;
  asio::steady_timer pause_;
  bool said_ = false;
};

} // namespace

int serve(const serve_options& opt) {
  std::error_code fec;
  server srv{opt, logdir_cache{opt}, fs::canonical(opt.logdir, fec), 0};
  if (auto err = srv.cache.refresh(true)) {
    std::cerr << "quern-board: " << message_of(err) << "\n";
    return 1;
  }
  asio::io_context ioc{1};
  tcp::acceptor acceptor{ioc};
  beast::error_code ec;
  // 127.0.0.1 only: the page has no authentication.
  tcp::endpoint endpoint{asio::ip::make_address("127.0.0.1"), opt.port};
  acceptor.open(endpoint.protocol(), ec);
  if (!ec)
    acceptor.set_option(asio::socket_base::reuse_address(true), ec);
  if (!ec)
    acceptor.bind(endpoint, ec);
  if (!ec)
    acceptor.listen(asio::socket_base::max_listen_connections, ec);
  if (ec) {
    std::cerr << "quern-board: cannot listen on 127.0.0.1:" << opt.port << ": "
              << ec.message() << "\n";
    return 1;
  }
  srv.port = acceptor.local_endpoint().port();
  asio::signal_set signals{ioc, SIGINT, SIGTERM};
  signals.async_wait([&](beast::error_code, int) {
    // Stop accepting and drop open connections: the loop then ends.
    ioc.stop();
  });
  acceptor_loop accepting{acceptor, srv};
  accepting.start();
  std::cout << "quern-board: serving " << opt.logdir
            << " on http://127.0.0.1:" << srv.port << "/ (Ctrl-C stops)" << std::endl;
  ioc.run();
  std::cout << "quern-board: stopped" << std::endl;
  return 0;
}

} // namespace quern::board
