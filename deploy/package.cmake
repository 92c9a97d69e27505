# The Debian package termbridge_<version>_<arch>.deb (deploy/package.sh, or
# the `deb` target): what `cmake --install` puts under the prefix, packed by
# CPack's DEB generator with Depends from dpkg-shlibdeps. The binaries and the
# console assets are installed by their own folders' CMakeLists; this file
# adds what lives in deploy/ and docs/ and sets up CPack. Layout under /usr:
#   bin/                          termbridge-broker, termbridge-git (found beside the broker),
#                                 termbridge, termbridge-agent,
#                                 termbridge-make-credentials (deploy/make-credentials.sh)
#   share/termbridge/console-assets/   the web console, where the broker looks by
#                                 default (<binary dir>/../share/termbridge/console-assets)
#   lib/systemd/user/             termbridge-broker.service
#   share/doc/termbridge/         README.md, docs/*.md, examples/broker.toml
# The same rules serve a source install: cmake --install build --prefix ~/.local
# (docs/operating.md#install-from-the-package).

install(PROGRAMS ${PROJECT_SOURCE_DIR}/deploy/make-credentials.sh
        DESTINATION bin RENAME termbridge-make-credentials)
install(FILES ${PROJECT_SOURCE_DIR}/deploy/termbridge-broker.service
        DESTINATION lib/systemd/user)
install(FILES ${PROJECT_SOURCE_DIR}/README.md DESTINATION share/doc/termbridge)
file(GLOB TB_DOCS CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/docs/*.md)
install(FILES ${TB_DOCS} DESTINATION share/doc/termbridge/docs)
install(FILES ${PROJECT_SOURCE_DIR}/deploy/broker.toml DESTINATION share/doc/termbridge/examples)

# cpack runs the `preinstall` target first, which would otherwise build `all`
# (every test); the `deb` target builds just what the package holds, so a
# plain `cmake --install` also expects those targets built (deploy/build.sh).
set(CMAKE_SKIP_INSTALL_ALL_DEPENDENCY ON)

set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME termbridge)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_CONTACT "termbridge maintainers <termbridge@localhost>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY
    "visible host terminals for AI agents in containers (MCP agent, broker, CLI)")
set(CPACK_PACKAGE_DESCRIPTION
    "termbridge-agent is an MCP server, usually in a container, whose terminal tools run in real
PTYs owned by termbridge-broker on the host: policy, approvals by a person, an audit log,
native windows and a web console. termbridge is the operator CLI. The broker runs as a
systemd user service (termbridge-broker.service).")
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)  # termbridge_<version>_<arch>.deb
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_DEBIAN_PACKAGE_SECTION utils)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
# Depends: the shared libraries the binaries link, found by dpkg-shlibdeps.
# openssl: termbridge-make-credentials.
set(CPACK_DEBIAN_PACKAGE_RECOMMENDS "openssl")
set(CPACK_DEBIAN_PACKAGE_SUGGESTS "xterm | x-terminal-emulator, libnotify-bin, podman | docker.io")
set(CPACK_STRIP_FILES ON)
include(CPack)

add_custom_target(deb
  COMMAND ${CMAKE_CPACK_COMMAND} --config ${CMAKE_BINARY_DIR}/CPackConfig.cmake
          -B ${CMAKE_BINARY_DIR}/package
  COMMENT "Debian package -> ${CMAKE_BINARY_DIR}/package"
  VERBATIM)
add_dependencies(deb termbridge-broker termbridge termbridge-agent tb_console_assets)
