// https for HttpClient: Boost.Asio SSL over OpenSSL. The only file of the
// client that includes OpenSSL, compiled on its own (never in a unity
// batch), so that a binary that never creates a TlsContext (libzeus_c.so,
// through the daemon relays) does not need libssl.

#include <memory>
#include <string>
#include <utility>

#include <boost/asio/ssl.hpp>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include "zeus/http/client.h"

#include "src/http/client_connection.h"

namespace zeus {
namespace {

namespace asio = http_client::asio;
namespace beast = http_client::beast;
namespace ssl = boost::asio::ssl;
using http_client::error_code;
using TlsStream = ssl::stream<beast::tcp_stream>;

// The oldest error OpenSSL queued (and the queue cleared), or `fallback`.
std::string OpenSslError(const std::string& fallback) {
  const unsigned long code = ERR_get_error();
  ERR_clear_error();
  if (code == 0) return fallback;
  char text[256];
  ERR_error_string_n(code, text, sizeof(text));
  return text;
}

class OpenSslTlsContext final : public TlsContext {
 public:
  explicit OpenSslTlsContext(std::unique_ptr<ssl::context> context)
      : context_(std::move(context)) {}

  StatusOr<std::unique_ptr<http_client::ClientConnection>> Connect(
      asio::io_context& ioc, const std::string& host, unsigned short port,
      const http_client::Limits& limits) const override {
    ZEUS_ASSIGN_OR_RETURN(beast::tcp_stream tcp, http_client::OpenTcp(ioc, host, port, limits));
    TlsStream stream(std::move(tcp), *context_);
    SSL* handle = stream.native_handle();
    // The name the certificate must carry: an IP address is matched against
    // its IP entries, a name against its DNS names (and sent as SNI).
    error_code not_ip;
    asio::ip::make_address(host, not_ip);
    if (!not_ip) {
      if (X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(handle), host.c_str()) != 1) {
        return UnavailableError("TLS: cannot verify against IP address " + host + ": " +
                                OpenSslError("unknown error"));
      }
    } else {
      if (SSL_set_tlsext_host_name(handle, host.c_str()) != 1 ||
          SSL_set1_host(handle, host.c_str()) != 1) {
        return UnavailableError("TLS: cannot verify against host name " + host + ": " +
                                OpenSslError("unknown error"));
      }
    }
    http_client::ExpireAt(beast::get_lowest_layer(stream), limits.ConnectExpiry());
    const error_code ec = http_client::RunOperation(ioc, [&](auto handler) {
      stream.async_handshake(ssl::stream_base::client, std::move(handler));
    });
    if (ec) {
      const long verify = SSL_get_verify_result(handle);
      error_code ignored;
      beast::get_lowest_layer(stream).socket().close(ignored);
      if (ec == beast::error::timeout) {
        return UnavailableError(limits.TimeoutMessage("in the TLS handshake", true));
      }
      if (verify != X509_V_OK) {
        return UnavailableError("TLS certificate verification failed for " + host + ": " +
                                X509_verify_cert_error_string(verify));
      }
      ERR_clear_error();
      return UnavailableError("TLS handshake failed: " + ec.message());
    }
    return std::unique_ptr<http_client::ClientConnection>(
        std::make_unique<http_client::StreamConnection<TlsStream>>(ioc, std::move(stream)));
  }

 private:
  std::unique_ptr<ssl::context> context_;
};

// A client context that verifies the peer; `trust` adds the trusted
// certificates.
template <class Trust>
StatusOr<std::shared_ptr<TlsContext>> MakeContext(Trust&& trust) {
  auto context = std::make_unique<ssl::context>(ssl::context::tls_client);
  error_code ec;
  context->set_options(ssl::context::default_workarounds | ssl::context::no_sslv2 |
                           ssl::context::no_sslv3 | ssl::context::no_tlsv1 |
                           ssl::context::no_tlsv1_1,
                       ec);
  if (!ec) context->set_verify_mode(ssl::verify_peer, ec);
  if (ec) return UnavailableError("TLS: cannot set up a context: " + ec.message());
  ZEUS_RETURN_IF_ERROR(trust(*context));
  return std::shared_ptr<TlsContext>(std::make_shared<OpenSslTlsContext>(std::move(context)));
}

}  // namespace

StatusOr<std::shared_ptr<TlsContext>> SystemTlsContext() {
  return MakeContext([](ssl::context& context) -> Status {
    error_code ec;
    context.set_default_verify_paths(ec);
    if (ec) return UnavailableError("TLS: cannot load the system's CA store: " + ec.message());
    return Status::Ok();
  });
}

StatusOr<std::shared_ptr<TlsContext>> TlsContextTrusting(const std::string& ca_pem_file) {
  return MakeContext([&ca_pem_file](ssl::context& context) -> Status {
    error_code ec;
    context.load_verify_file(ca_pem_file, ec);
    if (ec) {
      ERR_clear_error();
      return InvalidArgumentError("TLS: cannot load trusted certificates from '" + ca_pem_file +
                                  "': " + ec.message());
    }
    return Status::Ok();
  });
}

}  // namespace zeus
