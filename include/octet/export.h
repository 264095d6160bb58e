// OCTET_API marks what liboctet exports. The library is built with -fvisibility=hidden and a
// version script (cmake/octet.map), so everything without it stays inside the library.
#ifndef OCTET_EXPORT_H_
#define OCTET_EXPORT_H_

#if defined(__GNUC__) || defined(__clang__)
#define OCTET_API __attribute__((visibility("default")))
#define OCTET_HIDDEN __attribute__((visibility("hidden")))  // a member of an OCTET_API class
#else
#define OCTET_API
#define OCTET_HIDDEN
#endif

#endif /* OCTET_EXPORT_H_ */
