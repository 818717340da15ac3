#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

/// Whether the test process has `symbol`: a sanitizer's runtime is found by its entry point.
private func processHas(_ symbol: String) -> Bool {
  let process = dlopen(nil, RTLD_NOW)
  defer { if let process { dlclose(process) } }
  return dlsym(process, symbol) != nil
}

/// Whether the tests run under ThreadSanitizer: suites of value code on one thread, which it has no race to find in,
/// are left to the plain and AddressSanitizer runs.
let isThreadSanitized = processHas("__tsan_init")

/// Whether the tests run under ThreadSanitizer or AddressSanitizer (`swift test --sanitize=…`), whose runtimes make
/// stress tests several times slower.
let isSanitized = isThreadSanitized || processHas("__asan_init")
