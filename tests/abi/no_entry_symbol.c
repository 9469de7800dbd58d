/* A well-formed shared object that is not a Mantissa plugin: it exports a
 * function, but not MNT_GetPluginApi. */
__attribute__((visibility("default"))) int mnt_not_the_entry_point(int x) {
  return x + 1;
}
