#include "support/local_http_server.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <thread>

#include "support/test_util.h"

namespace mmirage::testing {
namespace {

// The server script. A file server on 127.0.0.1 (a free port chosen by the OS) that logs each request's path,
// Authorization and Range headers, answers Range requests with 206 (or ignores them in "norange" mode, or 416 past the
// end), and redirects /redirect/<p> to /<p>.
constexpr const char* kServerPy = R"PY(
import http.server, os, re, sys, urllib.parse
root, port_file, log_file, mode = sys.argv[1:5]
class H(http.server.BaseHTTPRequestHandler):
    def log_message(self, *args): pass
    def do_GET(self):
        with open(log_file, 'a') as f:
            f.write('%s auth=%s range=%s\n' % (self.path, self.headers.get('Authorization', ''),
                                                self.headers.get('Range', '')))
        path = urllib.parse.unquote(self.path.split('?')[0])
        if path.startswith('/redirect/'):
            self.send_response(302)
            self.send_header('Location', path[len('/redirect'):])
            self.send_header('Content-Length', '0')
            self.end_headers()
            return
        full = os.path.normpath(os.path.join(root, path.lstrip('/')))
        if not full.startswith(root) or not os.path.isfile(full):
            self.send_error(404)
            return
        data = open(full, 'rb').read()
        m = re.match(r'bytes=(\d+)-$', self.headers.get('Range', ''))
        start = 0
        if m and mode != 'norange':
            start = int(m.group(1))
            if start >= len(data):
                self.send_error(416)
                return
            self.send_response(206)
            self.send_header('Content-Range', 'bytes %d-%d/%d' % (start, len(data) - 1, len(data)))
        else:
            self.send_response(200)
        self.send_header('Content-Length', str(len(data) - start))
        self.end_headers()
        self.wfile.write(data[start:])
srv = http.server.ThreadingHTTPServer(('127.0.0.1', 0), H)
with open(port_file + '.tmp', 'w') as f:
    f.write(str(srv.server_address[1]))
os.rename(port_file + '.tmp', port_file)
srv.serve_forever()
)PY";

}  // namespace

LocalHttpServer::LocalHttpServer(const std::string& dir, const std::string& root, const std::string& mode)
    : log_path_(dir + "/requests.log") {
  if (RunCommand("command -v python3").exit_code != 0) {
    error_ = "python3 is not on PATH: the download tests need it to serve files on 127.0.0.1";
    return;
  }
  const std::string script = dir + "/server.py", port_file = dir + "/port";
  WriteFile(script, kServerPy);
  WriteFile(log_path_, "");
  pid_ = ::fork();
  if (pid_ == 0) {
    ::execlp("python3", "python3", script.c_str(), root.c_str(), port_file.c_str(), log_path_.c_str(), mode.c_str(),
             static_cast<char*>(nullptr));
    ::_exit(127);
  }
  // Wait (bounded) for the server to publish its port; it listens before writing the file.
  for (int i = 0; i < 500 && port_ == 0; ++i) {
    std::string p = ReadFile(port_file);
    if (!p.empty()) {
      port_ = std::stoi(p);
      break;
    }
    int status = 0;
    if (::waitpid(pid_, &status, WNOHANG) == pid_) {
      pid_ = -1;
      error_ = "the python3 test server exited before listening (status " + std::to_string(status) + ")";
      return;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  if (port_ == 0) error_ = "the python3 test server did not start within 10 s";
}

void LocalHttpServer::Stop() {
  if (pid_ <= 0) return;
  ::kill(pid_, SIGTERM);
  ::waitpid(pid_, nullptr, 0);
  pid_ = -1;
}

std::vector<std::string> LocalHttpServer::Requests() const { return ReadLines(log_path_); }

}  // namespace mmirage::testing
