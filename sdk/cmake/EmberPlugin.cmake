# ember_add_backend_plugin(TARGET SOURCES...)
#
# Builds a backend plugin: the shared library lib<TARGET>.so that `ember run
# --backend-path DIR` (or EMBER_BACKEND_PATH) loads. Its sources define the
# entry point with EMBER_DEFINE_BACKEND_PLUGIN (ember/Plugin.h).
#
# The plugin links Ember::ember statically (the core libraries are PIC) and
# hides that copy (--exclude-libs,ALL, hidden visibility, and a version script
# that makes every symbol but the entry point local: libstdc++ declares its
# templates with default visibility, so without it their weak instantiations
# would be exported): it exports only `ember_backend_plugin`, so it loads into any host (the `ember` tool, a test,
# an application) without clashing with the host's own copy of the core, and
# --no-undefined catches a missing symbol at link time instead of at load
# time. Objects crossing the boundary (Backend, CompiledFunction, IRFunction,
# Tensor, Error) have the same layout on both sides because host and plugin
# are built from the same SDK headers, which the ABI version check guarantees.
function(ember_add_backend_plugin target)
  if(NOT ARGN)
    message(FATAL_ERROR "ember_add_backend_plugin(${target}): no sources given")
  endif()
  add_library(${target} MODULE ${ARGN})
  target_link_libraries(${target} PRIVATE Ember::ember)
  target_compile_features(${target} PRIVATE cxx_std_20)
  set_target_properties(${target} PROPERTIES PREFIX "lib" CXX_VISIBILITY_PRESET hidden
                                             VISIBILITY_INLINES_HIDDEN ON POSITION_INDEPENDENT_CODE ON)
  set(version_script ${CMAKE_CURRENT_BINARY_DIR}/${target}.exports.map)
  # CONFIGURE writes only when the content changes: a rewritten script would
  # be newer than the plugin (LINK_DEPENDS) and relink it on every build.
  file(CONFIGURE OUTPUT ${version_script} CONTENT "{\n  global: ember_backend_plugin;\n  local: *;\n};\n")
  target_link_options(${target} PRIVATE "LINKER:--exclude-libs,ALL" "LINKER:--no-undefined"
                      "LINKER:--version-script=${version_script}")
  set_property(TARGET ${target} APPEND PROPERTY LINK_DEPENDS ${version_script})
endfunction()
