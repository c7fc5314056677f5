# find_package(ctxscribe) for C and C++ hosts: the imported targets
#   ctxscribe::ctxscribe         the shared library (libctxscribe.so)
#   ctxscribe::ctxscribe_static  the static library (libctxscribe.a) and what it needs
# Installed by `make install PREFIX=...` under <prefix>/<libdir>/cmake/ctxscribe; the
# paths are relative to this file, so the prefix can move.
get_filename_component(_ctxscribe_prefix "${CMAKE_CURRENT_LIST_DIR}/../../.." ABSOLUTE)
set(_ctxscribe_libdir "${CMAKE_CURRENT_LIST_DIR}/../..")
get_filename_component(_ctxscribe_libdir "${_ctxscribe_libdir}" ABSOLUTE)

if(NOT TARGET ctxscribe::ctxscribe)
    add_library(ctxscribe::ctxscribe SHARED IMPORTED)
    set_target_properties(ctxscribe::ctxscribe PROPERTIES
        IMPORTED_LOCATION "${_ctxscribe_libdir}/libctxscribe.so"
        IMPORTED_NO_SONAME TRUE
        INTERFACE_INCLUDE_DIRECTORIES "${_ctxscribe_prefix}/include")
endif()
if(NOT TARGET ctxscribe::ctxscribe_static)
    find_package(Threads REQUIRED)
    add_library(ctxscribe::ctxscribe_static STATIC IMPORTED)
    set_target_properties(ctxscribe::ctxscribe_static PROPERTIES
        IMPORTED_LOCATION "${_ctxscribe_libdir}/libctxscribe.a"
        INTERFACE_INCLUDE_DIRECTORIES "${_ctxscribe_prefix}/include"
        INTERFACE_LINK_LIBRARIES "stdc++;gomp;gcc_s;util;rt;Threads::Threads;m;dl")
endif()
foreach(_ctxscribe_file "${_ctxscribe_libdir}/libctxscribe.so" "${_ctxscribe_libdir}/libctxscribe.a"
        "${_ctxscribe_prefix}/include/ctxscribe.h")
    if(NOT EXISTS "${_ctxscribe_file}")
        set(ctxscribe_FOUND FALSE)
        set(ctxscribe_NOT_FOUND_MESSAGE "${_ctxscribe_file} is missing: reinstall with `make install PREFIX=${_ctxscribe_prefix}`")
    endif()
endforeach()
unset(_ctxscribe_file)
unset(_ctxscribe_prefix)
unset(_ctxscribe_libdir)
