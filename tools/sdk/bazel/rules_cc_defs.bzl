"""Minimal offline @rules_cc: forwards each rule to Bazel 4.2.3's native one.

Upstream rules_cc only adds thin wrappers too; forwarding keeps the embedded
@bazel_tools//tools/cpp loadable without a download.
"""

def cc_binary(**attrs):
    native.cc_binary(**attrs)

def cc_import(**attrs):
    native.cc_import(**attrs)

def cc_library(**attrs):
    native.cc_library(**attrs)

def cc_test(**attrs):
    native.cc_test(**attrs)

def cc_toolchain(**attrs):
    native.cc_toolchain(**attrs)

def cc_toolchain_suite(**attrs):
    native.cc_toolchain_suite(**attrs)

def cc_proto_library(**attrs):
    native.cc_proto_library(**attrs)

def objc_library(**attrs):
    native.objc_library(**attrs)

def objc_import(**attrs):
    native.objc_import(**attrs)

def fdo_profile(**attrs):
    native.fdo_profile(**attrs)

def fdo_prefetch_hints(**attrs):
    native.fdo_prefetch_hints(**attrs)
