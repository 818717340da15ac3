#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

/// Whether the tests run under ThreadSanitizer or AddressSanitizer (`swift test --sanitize=…`), whose runtimes make
/// stress tests several times slower: found by their runtime's entry point in the process.
let isSanitized: Bool = {
  let process = dlopen(nil, RTLD_NOW)
  defer { if let process { dlclose(process) } }
  return dlsym(process, "__tsan_init") != nil || dlsym(process, "__asan_init") != nil
}()

/// Whether the tests run under ThreadSanitizer: suites of value code on one thread, which it has no race to find in,
/// are left to the plain and AddressSanitizer runs.
let isThreadSanitized: Bool = {
  let process = dlopen(nil, RTLD_NOW)
  defer { if let process { dlclose(process) } }
  return dlsym(process, "__tsan_init") != nil
}()
