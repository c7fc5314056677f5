/*
 * Deliberately forgets to free an error object. run-c-tests.sh expects LeakSanitizer to
 * report it: proof that the suppressions for the engine's process-wide state do not
 * hide leaks of the objects a C caller owns.
 */
#include <stdio.h>

#include "ctxscribe.h"

int main(void) {
    ctxscribe_request *request = ctxscribe_request_new();
    ctxscribe_error *err = NULL;
    ctxscribe_status status = ctxscribe_request_add_language(request, "xx", &err);
    ctxscribe_request_free(request);
    printf("status %u, error object %s (not freed on purpose)\n", (unsigned)status,
           err != NULL ? "made" : "missing");
    return err != NULL ? 0 : 3;
}
