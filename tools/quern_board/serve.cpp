#include "serve.hpp"

#include <sys/stat.h>

#include <cerrno>
#include <chrono>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <optional>
#include <sstream>

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>
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

/// The log directory as last read: each file is read again only when its
/// size or modification time changed.
class logdir_cache {
public:
  explicit logdir_cache(serve_options opt) : opt_(std::move(opt)) {}

  /// Re-reads what changed; an error when the log directory cannot be read.
  caf::error refresh() {
    auto runs = find_runs(opt_.logdir);
    if (!runs)
      return runs.error();
    std::string signature;
    std::map<std::string, entry> next;
    for (auto& r : *runs) {
      for (auto& path : r.files) {
        struct ::stat st {};
        int64_t size = -1, mtime = 0;
        if (::stat(path.c_str(), &st) == 0) {
          size = st.st_size;
          mtime = int64_t{st.st_mtim.tv_sec} * 1000000000 + st.st_mtim.tv_nsec;
        }
        auto it = files_.find(path);
        if (it != files_.end() && it->second.size == size && it->second.mtime == mtime) {
          next.emplace(path, std::move(it->second));
        } else {
          next.emplace(path, entry{size, mtime, read_event_file(path)});
        }
        signature +=
            path + '\0' + std::to_string(size) + '\0' + std::to_string(mtime) + '\n';
      }
    }
    files_ = std::move(next);
    if (signature == signature_ && !data_.empty())
      return {};
    signature_ = signature;
    ++generation_;
    auto before = std::move(reports_);
    auto base = version_;
    reports_.clear();
    for (auto& r : *runs) {
      std::vector<const event_file_contents*> contents;
      for (auto& path : r.files)
        contents.push_back(&files_.at(path).contents);
      reports_.push_back(make_run_report(r.run, contents, selection{}, true));
    }
    sort_by_start_time(reports_);
    version_ = instance_ + "-" + std::to_string(generation_);
    data_ = page_data(reports_, opt_.page, version_);
    // A page that has the previous version gets only the new points.
    delta_base_ = base;
    delta_ = base.empty() ? std::string{}
                          : page_delta(before, reports_, opt_.page, base, version_);
    page_.clear();
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

  const std::string& version() const { return version_; }
  const std::string& data() const { return data_; }
  const std::string& page() {
    if (page_.empty())
      page_ = render_page(reports_, opt_.page, version_);
    return page_;
  }
  const std::vector<run_report>& reports() const { return reports_; }

private:
  struct entry {
    int64_t size;
    int64_t mtime;
    event_file_contents contents;
  };
  serve_options opt_;
  // Versions name this server too: a page left open from an earlier one
  // must not take a delta meant for another base.
  std::string instance_ =
      std::to_string(std::chrono::system_clock::now().time_since_epoch().count());
  std::map<std::string, entry> files_;
  std::string signature_;
  uint64_t generation_ = 0;
  std::vector<run_report> reports_;
  std::string version_;
  std::string data_;
  std::string delta_base_;
  std::string delta_;
  std::string page_;
};

struct server {
  serve_options opt;
  logdir_cache cache;
  fs::path root; // the log directory, canonical
  unsigned short port = 0;
};

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

template <class Body>
response handle(server& srv, const http::request<Body>& req) {
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

  if (auto err = srv.cache.refresh())
    return error_response(http::status::service_unavailable, v, message_of(err));
  if (path == "/" || path == "/index.html") {
    auto res =
        text_response(http::status::ok, v, srv.cache.page(), "text/html; charset=utf-8");
    return res;
  }
  if (path == "/data") {
    auto* body = srv.cache.data_for(params["have"]);
    if (!body)
      return text_response(http::status::no_content, v, "");
    return text_response(http::status::ok, v, *body, "application/json");
  }
  if (path == "/export.csv") {
    // The same text as `quern-board export LOGDIR [--run R] [--tag T]`.
    std::ostringstream out;
    selection sel;
    if (params.count("run"))
      sel.runs.insert(params["run"]);
    if (params.count("tag"))
      sel.tags.insert(params["tag"]);
    auto runs = find_runs(srv.opt.logdir);
    if (!runs)
      return error_response(http::status::service_unavailable, v,
                            message_of(runs.error()));
    write_export(out, read_runs(*runs, sel, true), false);
    return text_response(http::status::ok, v, out.str(), "text/csv; charset=utf-8");
  }
  const std::string files_prefix = "/logdir/";
  if (path.compare(0, files_prefix.size(), files_prefix) == 0) {
    // A file of the log directory, as it is on disk; nothing outside it.
    std::error_code ec;
    auto wanted = fs::weakly_canonical(srv.root / path.substr(files_prefix.size()), ec);
    auto rel = wanted.lexically_relative(srv.root);
    if (ec || rel.empty() || *rel.begin() == "..")
      return error_response(http::status::forbidden, v, "the path leaves LOGDIR");
    if (!fs::is_regular_file(wanted, ec))
      return error_response(http::status::not_found, v, "no such file in LOGDIR");
    std::ifstream in(wanted, std::ios::binary);
    std::ostringstream body;
    body << in.rdbuf();
    return text_response(http::status::ok, v, body.str(), "application/octet-stream");
  }
  return error_response(http::status::not_found, v, "no page " + path);
}

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
    auto res = handle(srv_, req);
    send(std::move(res), req.method() == http::verb::head);
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
  if (auto err = srv.cache.refresh()) {
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
