// The generated header used from C++: it must compile with -Wall -Wextra -Werror
// -pedantic, give C linkage (this program links against the library), and keep the
// status type 32 bits wide.
#include "ctxscribe.h"

#include <cstdio>
#include <cstring>
#include <type_traits>

static_assert(sizeof(ctxscribe_status) == 4, "ctxscribe_status is 32 bits");
static_assert(std::is_same<std::underlying_type<ctxscribe_status>::type, uint32_t>::value,
              "ctxscribe_status is a uint32_t enum");
static_assert(CTXSCRIBE_STATUS_PANIC == 101, "status values are stable");

int main() {
    bool ok = true;
    ctxscribe_error *err = nullptr;
    ctxscribe_status status = ctxscribe_request_add_language(nullptr, "en", &err);
    ok = ok && status == CTXSCRIBE_STATUS_NULL_ARGUMENT && err != nullptr &&
         std::strcmp(ctxscribe_error_code(err), "null_argument") == 0;
    ctxscribe_error_free(err);

    ctxscribe_request *request = ctxscribe_request_new();
    ok = ok && ctxscribe_request_add_message(request, CTXSCRIBE_ROLE_USER, "hi", nullptr) ==
                   CTXSCRIBE_STATUS_OK;
    ok = ok && ctxscribe_request_add_language(request, "xx", nullptr) ==
                   CTXSCRIBE_STATUS_INVALID_REQUEST;
    ctxscribe_request_free(request);
    std::printf("%s: C++ use of ctxscribe.h (version %s)\n", ok ? "ok" : "FAIL",
                ctxscribe_version());
    return ok ? 0 : 1;
}
