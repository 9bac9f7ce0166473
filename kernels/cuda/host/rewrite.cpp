// Makes a .cu file host C++ by rewriting the two pieces of CUDA syntax that are not C++, as
// nvcc's own front end rewrites the launch into runtime calls:
//   kernel<<<grid, block, shared, stream>>>(args)  ->  launch<kernel>(grid, block, shared,
//   stream)(args)
//   __shared__ __align__(16) float As[32][33];     ->  PARALAB_CUDA_HOST_SHARED(16, float, As,
//   [32][33]);
// Everything else is kept, line for line (a #line directive points errors at the .cu file).
// Usage: paralab-cuda-host-rewrite IN.cu OUT.cpp (see paralab_cuda_on_host in
// kernels/CMakeLists.txt).
#include <algorithm>
#include <cctype>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>

namespace {

std::string g_file;
const std::string* g_text = nullptr;  // the text being rewritten, for line numbers

[[noreturn]] void fail(size_t at, const std::string& what) {
  const long line = 1 + std::count(g_text->begin(), g_text->begin() + long(at), '\n');
  std::cerr << g_file << ":" << line << ": cannot run on the host: " << what << "\n";
  std::exit(1);
}

bool isWord(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

// Where code is: 1 for each character of the text outside comments and string literals.
std::string codeMask(const std::string& s) {
  std::string code(s.size(), 1);
  for (size_t i = 0; i < s.size(); ++i) {
    size_t end = i;
    if (s.compare(i, 2, "//") == 0)
      end = s.find('\n', i);
    else if (s.compare(i, 2, "/*") == 0)
      end = s.find("*/", i) + 1;
    else if (s[i] == '"' || s[i] == '\'')
      for (end = i + 1; end < s.size() && s[end] != s[i]; ++end) end += s[end] == '\\';
    else
      continue;
    if (end == std::string::npos || end >= s.size()) end = s.size() - 1;
    for (size_t k = i; k <= end; ++k) code[k] = 0;
    i = end;
  }
  return code;
}

size_t findCode(const std::string& s, const std::string& code, const std::string& what,
                size_t from) {
  for (size_t at = s.find(what, from); at != std::string::npos; at = s.find(what, at + 1))
    if (code[at]) return at;
  return std::string::npos;
}

// The kernel before `<<<` at `lt`: a name, possibly qualified, possibly with template arguments.
size_t kernelStart(const std::string& s, size_t lt) {
  size_t i = lt;
  while (i > 0 && std::isspace(static_cast<unsigned char>(s[i - 1]))) --i;
  if (i > 0 && s[i - 1] == '>') {  // back over the template arguments, nested brackets too
    int depth = 0;
    do {
      --i;
      depth += s[i] == '>' || s[i] == ')' ? 1 : s[i] == '<' || s[i] == '(' ? -1 : 0;
    } while (i > 0 && depth > 0);
  }
  while (i > 0 && (isWord(s[i - 1]) || s[i - 1] == ':')) --i;
  if (i == lt || !isWord(s[i])) fail(lt, "no kernel name before <<<");
  return i;
}

std::string rewriteLaunches(const std::string& s) {
  g_text = &s;
  const std::string code = codeMask(s);
  std::string out;
  size_t done = 0;
  for (size_t lt = findCode(s, code, "<<<", 0); lt != std::string::npos;
       lt = findCode(s, code, "<<<", lt + 3)) {
    const size_t gt = findCode(s, code, ">>>", lt);
    if (gt == std::string::npos) fail(lt, "<<< without >>>");
    const size_t start = kernelStart(s, lt);
    size_t nameEnd = lt;
    while (std::isspace(static_cast<unsigned char>(s[nameEnd - 1]))) --nameEnd;
    out += s.substr(done, start - done) + "::paralab::cuda_host::launch<" +
           s.substr(start, nameEnd - start) + ">" + s.substr(nameEnd, lt - nameEnd) + "(" +
           s.substr(lt + 3, gt - lt - 3) + ")";
    done = gt + 3;
  }
  return out + s.substr(done);
}

std::string trim(const std::string& s) {
  const size_t a = s.find_first_not_of(" \t\n"), b = s.find_last_not_of(" \t\n");
  return a == std::string::npos ? "" : s.substr(a, b - a + 1);
}

// `[extern] __shared__ [__align__(N)] TYPE NAME[DIMS];` -> PARALAB_CUDA_HOST_SHARED(N, TYPE, NAME,
// [DIMS]);
std::string rewriteShared(const std::string& s) {
  g_text = &s;
  const std::string code = codeMask(s);
  std::string out;
  size_t done = 0;
  for (size_t at = findCode(s, code, "__shared__", 0); at != std::string::npos;
       at = findCode(s, code, "__shared__", at + 1)) {
    if ((at > 0 && isWord(s[at - 1])) || isWord(s[at + 10])) continue;
    size_t start = at;
    const size_t ext = s.rfind("extern", at);
    if (ext != std::string::npos && trim(s.substr(ext + 6, at - ext - 6)).empty()) start = ext;
    const size_t semi = s.find(';', at);
    if (semi == std::string::npos) fail(at, "__shared__ without ';'");
    std::string decl = trim(s.substr(at + 10, semi - at - 10)), align = "0";
    if (decl.rfind("__align__(", 0) == 0) {
      const size_t close = decl.find(')');
      align = decl.substr(10, close - 10);
      decl = trim(decl.substr(close + 1));
    }
    if (decl.find_first_of(",={") != std::string::npos)
      fail(at, "one __shared__ variable per declaration, without an initialiser");
    const size_t bracket = std::min(decl.find('['), decl.size());
    const std::string dims = decl.substr(bracket), head = trim(decl.substr(0, bracket));
    size_t name = head.size();
    while (name > 0 && isWord(head[name - 1])) --name;
    if (name == 0 || name == head.size()) fail(at, "cannot tell the type from the name");
    if ((start != at) != (dims == "[]")) fail(at, "only `extern __shared__ T name[];` is dynamic");
    out += s.substr(done, start - done) + "PARALAB_CUDA_HOST_SHARED(" + align + ", " +
           trim(head.substr(0, name)) + ", " + head.substr(name) + ", " + dims + ");" +
           std::string(size_t(std::count(s.begin() + long(start), s.begin() + long(semi), '\n')),
                       '\n');
    done = semi + 1;
  }
  return out + s.substr(done);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::cerr << "usage: paralab-cuda-host-rewrite IN.cu OUT.cpp\n";
    return 2;
  }
  g_file = argv[1];
  std::ifstream in(argv[1]);
  if (!in) {
    std::cerr << "paralab-cuda-host-rewrite: cannot read " << argv[1] << "\n";
    return 2;
  }
  std::stringstream text;
  text << in.rdbuf();
  const std::string body = rewriteShared(rewriteLaunches(text.str()));
  std::ofstream out(argv[2]);
  out << "// Generated from " << g_file << " by paralab-cuda-host-rewrite: host execution of the\n"
      << "// kernel source, for the tests. nvcc includes cuda_runtime.h first, so does this.\n"
      << "#include <cuda_runtime.h>\n#line 1 \"" << g_file << "\"\n"
      << body;
  if (out) return 0;
  std::cerr << "paralab-cuda-host-rewrite: cannot write " << argv[2] << "\n";
  return 1;
}
