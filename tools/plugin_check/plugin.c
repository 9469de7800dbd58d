/* Fixture for //tools:plugin.bzl: one exported entry point, one that must stay hidden. */
int mnt_plugin_check_helper(int x) { return x * 2; }

const void* MNT_GetPluginApi(void) {
  static const int api = 1;
  return mnt_plugin_check_helper(api) == 2 ? &api : 0;
}
