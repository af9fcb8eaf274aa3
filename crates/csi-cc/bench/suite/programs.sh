# Sourced by run.sh and metadata_size.sh: per program of the suite, its Debian source package,
# its binary inside the build tree, its configure step and its build (make_prog reads $JOBS).
pkg() { case "$1" in lua) echo lua5.4 ;; zstd) echo libzstd ;; *) echo "$1" ;; esac; }
bin_of() {
  case "$1" in
    flex) echo src/flex ;; grep) echo src/grep ;; lua) echo src/lua ;; bzip2) echo bzip2 ;;
    zstd) echo programs/zstd ;; gzip) echo gzip ;;
  esac
}
configure_once() { # prog srcdir: autoconf projects are configured once, with plain clang-19
  case "$1" in
    flex|grep|gzip) (cd "$2" && CC="clang-19 -g" ./configure --disable-nls >../configure.log 2>&1) ;;
  esac
}
make_prog() { # prog dir CC
  local p="$1" d="$2" c="$3"
  case "$p" in
    flex) make -C "$d/src" -j"$JOBS" CC="$c" flex ;;
    grep) make -C "$d/lib" -j"$JOBS" CC="$c" && make -C "$d/src" -j"$JOBS" CC="$c" grep ;;
    gzip) make -C "$d/lib" -j"$JOBS" CC="$c" && make -C "$d" -j"$JOBS" CC="$c" version.h version.c gzip ;;
    lua) make -C "$d/src" -j"$JOBS" linux CC="$c" ;;
    bzip2) make -C "$d" -j"$JOBS" CC="$c" bzip2 ;;
    zstd) make -C "$d/programs" -j"$JOBS" CC="$c" zstd ;;
  esac
}
