# The installed SDK: `cmake --install BUILD --prefix P` puts
#   P/include/ember/*.h                 the public headers
#   P/lib/libember_*.a                  the core libraries (static, PIC) and
#                                       libember_backend_reference.a, the fallback
#   P/bin/ember                         the command-line tool
#   P/share/doc/ember/                  the docs (docs/)
#   P/share/ember/onnx-node/            ONNX's node test data, for ember conformance --onnx-data
#   P/lib/cmake/Ember/EmberConfig.cmake (+ version file, targets, plugin helper)
# A client does find_package(Ember CONFIG REQUIRED) and links the one target
# Ember::ember; a backend plugin uses ember_add_backend_plugin() (EmberPlugin.cmake).
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set(EMBER_INSTALL_CMAKEDIR ${CMAKE_INSTALL_LIBDIR}/cmake/Ember)

# The plugin ABI version, read from the header that defines it.
file(STRINGS ${PROJECT_SOURCE_DIR}/core/include/ember/Plugin.h ember_abi_line
     REGEX "^#define EMBER_PLUGIN_ABI_VERSION [0-9]+")
string(REGEX REPLACE ".* ([0-9]+)$" "\\1" EMBER_PLUGIN_ABI_VERSION "${ember_abi_line}")

# The static libraries of core/ (whatever sub-libraries it has) are installed.
get_property(ember_core_targets DIRECTORY ${PROJECT_SOURCE_DIR}/core PROPERTY BUILDSYSTEM_TARGETS)
set(ember_sdk_libraries)
set(EMBER_NEEDS_YAML_CPP OFF)
foreach(target IN LISTS ember_core_targets)
  get_target_property(type ${target} TYPE)
  if(type STREQUAL "STATIC_LIBRARY")
    list(APPEND ember_sdk_libraries ${target})
    get_target_property(links ${target} LINK_LIBRARIES)
    if("yaml-cpp" IN_LIST links)
      set(EMBER_NEEDS_YAML_CPP ON)
    endif()
  endif()
endforeach()

# The one documented target, Ember::ember: everything a backend or an
# embedding application needs; the same libraries as the in-tree ember_core,
# plus the reference backend as an application's fallback: an executable is
# linked with --undefined=ember_installed_fallback_backend, which pulls in
# backends/reference/InstalledFallback.cpp and registers "reference" before
# main. A plugin (a MODULE) gets no copy of it.
add_library(ember_sdk INTERFACE)
get_target_property(ember_core_links ember_core INTERFACE_LINK_LIBRARIES)
target_link_libraries(ember_sdk INTERFACE ember_backend_reference ${ember_core_links})
target_link_options(ember_sdk INTERFACE
  "$<$<STREQUAL:$<TARGET_PROPERTY:TYPE>,EXECUTABLE>:LINKER:--undefined=ember_installed_fallback_backend>")
list(APPEND ember_sdk_libraries ember_backend_reference)
set_target_properties(ember_sdk PROPERTIES EXPORT_NAME ember)
add_library(Ember::ember ALIAS ember_sdk)

install(TARGETS ember_sdk ${ember_sdk_libraries} ember_warnings
        EXPORT EmberTargets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT Ember
        INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(TARGETS ember EXPORT EmberTargets RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT Ember)
install(DIRECTORY ${PROJECT_SOURCE_DIR}/core/include/ember DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}
        COMPONENT Ember FILES_MATCHING PATTERN "*.h" PATTERN "*.def")
# The typed attribute structs generated from Ops.def (core/CMakeLists.txt), so
# a plugin can write node.attrs<ConvAttrs>() against the installed SDK.
install(FILES ${PROJECT_BINARY_DIR}/core/generated/ember/OpAttrs.h
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/ember COMPONENT Ember)
# What a vendor reads and tests with: the docs, and ONNX's node test data
# (generated at build time by tests/onnx) that `ember conformance --onnx-data
# PREFIX/share/ember/onnx-node` reads.
install(DIRECTORY ${PROJECT_SOURCE_DIR}/docs/ DESTINATION ${CMAKE_INSTALL_DATAROOTDIR}/doc/ember COMPONENT Ember)
install(DIRECTORY ${CMAKE_BINARY_DIR}/testdata/onnx/node/ DESTINATION ${CMAKE_INSTALL_DATAROOTDIR}/ember/onnx-node
        COMPONENT Ember OPTIONAL PATTERN ".stamp" EXCLUDE)
install(EXPORT EmberTargets NAMESPACE Ember:: DESTINATION ${EMBER_INSTALL_CMAKEDIR} COMPONENT Ember)

configure_package_config_file(${CMAKE_CURRENT_LIST_DIR}/EmberConfig.cmake.in
                              ${CMAKE_CURRENT_BINARY_DIR}/EmberConfig.cmake
                              INSTALL_DESTINATION ${EMBER_INSTALL_CMAKEDIR}
                              PATH_VARS CMAKE_INSTALL_INCLUDEDIR CMAKE_INSTALL_BINDIR)
# Semantic versioning: while the major version is 0, a minor bump may break
# the API, so only the same major.minor is compatible.
if(PROJECT_VERSION_MAJOR EQUAL 0)
  set(ember_compatibility SameMinorVersion)
else()
  set(ember_compatibility SameMajorVersion)
endif()
write_basic_package_version_file(${CMAKE_CURRENT_BINARY_DIR}/EmberConfigVersion.cmake
                                 VERSION ${PROJECT_VERSION} COMPATIBILITY ${ember_compatibility})
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/EmberConfig.cmake ${CMAKE_CURRENT_BINARY_DIR}/EmberConfigVersion.cmake
              ${CMAKE_CURRENT_LIST_DIR}/EmberPlugin.cmake
        DESTINATION ${EMBER_INSTALL_CMAKEDIR} COMPONENT Ember)
