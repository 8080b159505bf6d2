# `cmake --install build --prefix DIR` installs the zeus CLI, the public
# headers, every layer library, the bundled data (share/zeus) and a CMake
# package: another project does find_package(zeus CONFIG REQUIRED) and links
# zeus::zeus (every layer) or one layer such as zeus::monitor.
include(CMakePackageConfigHelpers)

# zeus::zeus, the umbrella over the layers.
add_library(zeus_umbrella INTERFACE)
add_library(zeus::zeus ALIAS zeus_umbrella)
set_target_properties(zeus_umbrella PROPERTIES EXPORT_NAME zeus)
get_property(zeus_installed_targets GLOBAL PROPERTY ZEUS_INSTALLED_TARGETS)
target_link_libraries(zeus_umbrella INTERFACE ${zeus_installed_targets})

install(TARGETS zeus RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(TARGETS ${zeus_installed_targets} zeus_optimizer zeus_umbrella EXPORT zeusTargets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
        INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(DIRECTORY include/zeus DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(DIRECTORY data/ DESTINATION ${CMAKE_INSTALL_DATADIR}/zeus)

set(zeus_cmake_dir ${CMAKE_INSTALL_LIBDIR}/cmake/zeus)
install(EXPORT zeusTargets NAMESPACE zeus:: DESTINATION ${zeus_cmake_dir})
configure_package_config_file(cmake/zeusConfig.cmake.in
  ${CMAKE_CURRENT_BINARY_DIR}/zeusConfig.cmake INSTALL_DESTINATION ${zeus_cmake_dir}
  PATH_VARS CMAKE_INSTALL_DATADIR)
write_basic_package_version_file(${CMAKE_CURRENT_BINARY_DIR}/zeusConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/zeusConfig.cmake
              ${CMAKE_CURRENT_BINARY_DIR}/zeusConfigVersion.cmake
        DESTINATION ${zeus_cmake_dir})
