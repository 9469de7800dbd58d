// The extension chain walker (ABI 1.9): NULL-terminated chains, the length
// cap against cycles, links too short to follow or to hold the header,
// unknown types skipped, and the checks the loader refuses a plugin with.
#include "plugins/sdk/extension_chain.h"

#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "plugins/abi/mantissa.h"
#include "plugins/sdk/export.h"

namespace mnt::sdk {
namespace {

MNT_Plugin_Api Plugin(int32_t minor, MNT_Extension_Base* chain) {
  MNT_Plugin_Api api = MakePluginApi(MNT_PLUGIN_KIND_BACKEND, "p", "test", nullptr, nullptr,
                                     nullptr, nullptr, chain);
  api.abi_version.minor_version = minor;
  return api;
}

MNT_Extension_Header Header(int32_t type, const char* name, MNT_Extension_Base* next = nullptr) {
  MNT_Extension_Header h{};
  h.base.struct_size = MNT_Extension_Header_STRUCT_SIZE;
  h.base.type = static_cast<MNT_ExtensionType>(type);
  h.base.next = next;
  h.name = name;
  h.version = 1;
  return h;
}

std::vector<std::string> Names(const MNT_Plugin_Api& api) {
  std::vector<std::string> names;
  ForEachExtension(&api, [&](const MNT_Extension_Header& h) {
    names.push_back(ExtensionName(h));
    return true;
  });
  return names;
}

std::string Problem(const MNT_Plugin_Api& api) {
  const Status s = CheckExtensionChain(&api);
  return s.ok() ? "" : s.message();
}

TEST(ExtensionChainTest, EmptyChain) {
  const MNT_Plugin_Api api = Plugin(MNT_ABI_MINOR, nullptr);
  EXPECT_TRUE(Names(api).empty());
  EXPECT_EQ(FindExtension(&api, MNT_EXTENSION_TYPE_CAPABILITIES), nullptr);
  EXPECT_EQ(Problem(api), "");
  EXPECT_EQ(FindExtension(nullptr, MNT_EXTENSION_TYPE_CAPABILITIES), nullptr);
}

TEST(ExtensionChainTest, FindsByTypeAndSkipsUnknownTypes) {
  static const int32_t kCaps[] = {MNT_CAPABILITY_OPTIMIZER_DEVICE_LR};
  MNT_Capabilities_Extension caps = MakeCapabilitiesExtension(kCaps);
  MNT_Extension_Header unknown = Header(77, "from_the_future", &caps.header.base);
  const MNT_Plugin_Api api = Plugin(MNT_ABI_MINOR, &unknown.base);
  EXPECT_EQ(Names(api), (std::vector<std::string>{"from_the_future", "capabilities"}));
  EXPECT_EQ(FindExtension(&api, MNT_EXTENSION_TYPE_CAPABILITIES), &caps.header);
  EXPECT_EQ(FindExtension(&api, MNT_EXTENSION_TYPE_COLLECTIVES), nullptr);
  EXPECT_EQ(Problem(api), "") << "a reader skips a type it does not know";
}

TEST(ExtensionChainTest, ACycleEndsAtTheCap) {
  MNT_Extension_Header a = Header(77, "a"), b = Header(78, "b", &a.base);
  a.base.next = &b.base;
  const MNT_Plugin_Api api = Plugin(MNT_ABI_MINOR, &a.base);
  EXPECT_EQ(Names(api).size(), size_t{kMaxExtensionChainLength});
  EXPECT_EQ(FindExtension(&api, MNT_EXTENSION_TYPE_CAPABILITIES), nullptr);
  EXPECT_EQ(Problem(api), "extension chain is longer than 64 links (a cycle?)");

  MNT_Extension_Header self = Header(77, "self");
  self.base.next = &self.base;
  const MNT_Plugin_Api looped = Plugin(MNT_ABI_MINOR, &self.base);
  EXPECT_NE(Problem(looped).find("longer than 64 links"), std::string::npos);
}

TEST(ExtensionChainTest, SixtyFourLinksAreFineSixtyFiveAreNot) {
  std::vector<MNT_Extension_Header> links(kMaxExtensionChainLength + 1, Header(77, "x"));
  for (size_t i = 0; i + 1 < links.size(); ++i) links[i].base.next = &links[i + 1].base;
  const MNT_Plugin_Api api65 = Plugin(MNT_ABI_MINOR, &links[0].base);
  EXPECT_NE(Problem(api65), "");
  const MNT_Plugin_Api api64 = Plugin(MNT_ABI_MINOR, &links[1].base);
  EXPECT_EQ(Problem(api64), "");
  EXPECT_EQ(Names(api64).size(), size_t{kMaxExtensionChainLength});
}

TEST(ExtensionChainTest, ALinkTooShortToFollowEndsTheWalk) {
  static const int32_t kCaps[] = {MNT_CAPABILITY_STOCHASTIC_ROUNDING};
  MNT_Capabilities_Extension caps = MakeCapabilitiesExtension(kCaps);
  MNT_Extension_Header broken = Header(77, "broken", &caps.header.base);
  broken.base.struct_size = sizeof(size_t);  // no room for `next`
  const MNT_Plugin_Api api = Plugin(MNT_ABI_MINOR, &broken.base);
  EXPECT_TRUE(Names(api).empty());
  EXPECT_EQ(FindExtension(&api, MNT_EXTENSION_TYPE_CAPABILITIES), nullptr);
  EXPECT_EQ(Problem(api),
            "extension 0: struct_size 8 is smaller than the 24 bytes of MNT_Extension_Base");
}

TEST(ExtensionChainTest, ALinkWithoutTheHeaderIsSkipped) {
  static const int32_t kCaps[] = {MNT_CAPABILITY_STOCHASTIC_ROUNDING};
  MNT_Capabilities_Extension caps = MakeCapabilitiesExtension(kCaps);
  MNT_Extension_Base bare{sizeof(MNT_Extension_Base), MNT_EXTENSION_TYPE_CAPABILITIES,
                          &caps.header.base};
  const MNT_Plugin_Api api = Plugin(MNT_ABI_MINOR, &bare);
  EXPECT_EQ(Names(api), std::vector<std::string>{"capabilities"});
  EXPECT_EQ(FindExtension(&api, MNT_EXTENSION_TYPE_CAPABILITIES), &caps.header);
  EXPECT_EQ(Problem(api),
            "extension 0: struct_size 24 is smaller than the 36 bytes of MNT_Extension_Header");
}

TEST(ExtensionChainTest, HeaderFieldsAreChecked) {
  MNT_Extension_Header nameless = Header(77, nullptr);
  EXPECT_EQ(Problem(Plugin(MNT_ABI_MINOR, &nameless.base)), "extension 0 (type 77) has no name");
  MNT_Extension_Header v0 = Header(77, "v0");
  v0.version = 0;
  EXPECT_EQ(Problem(Plugin(MNT_ABI_MINOR, &v0.base)),
            "extension 'v0' has version 0 (versions start at 1)");
}

TEST(ExtensionChainTest, KnownTypesAreCheckedAgainstTheirSize) {
  MNT_Extension_Header short_caps = Header(MNT_EXTENSION_TYPE_CAPABILITIES, "capabilities");
  EXPECT_NE(Problem(Plugin(MNT_ABI_MINOR, &short_caps.base))
                .find("smaller than the 56 bytes of its version 1"),
            std::string::npos);
  MNT_Extension_Header short_coll = Header(MNT_EXTENSION_TYPE_COLLECTIVES, "collectives");
  EXPECT_NE(Problem(Plugin(MNT_ABI_MINOR, &short_coll.base)).find("its version 1"),
            std::string::npos);
}

// The collectives table rule (CheckCollectivesTable, also
// CollectivesClient::Find's; its cases in collectives_client_test): a NULL
// version-1 call is malformed, version 2's calls are not the loader's.
MNT_Error* NoRun(MNT_Collectives_Run_Args*) { return nullptr; }

TEST(ExtensionChainTest, CollectivesExtensionNeedsItsVersion1Calls) {
  MNT_Collectives_Extension coll =
      MakeCollectivesExtension(nullptr, nullptr, nullptr, &NoRun, nullptr, nullptr);
  EXPECT_EQ(Problem(Plugin(MNT_ABI_MINOR, &coll.header.base)),
            "extension 'collectives': Collectives_GetUniqueId is NULL (version 1's four calls "
            "are required)");
}

TEST(ExtensionChainTest, CapabilitiesExtensionIsChecked) {
  static const int32_t kCaps[] = {MNT_CAPABILITY_OPTIMIZER_DEVICE_LR};
  MNT_Capabilities_Extension second = MakeCapabilitiesExtension(kCaps);
  MNT_Capabilities_Extension first = MakeCapabilitiesExtension(kCaps, &second.header.base);
  EXPECT_EQ(Problem(Plugin(MNT_ABI_MINOR, &first.header.base)),
            "extension 'capabilities': a second extension of type 1 on the chain");

  MNT_Capabilities_Extension no_array = MakeCapabilitiesExtension(nullptr, 2);
  EXPECT_EQ(Problem(Plugin(MNT_ABI_MINOR, &no_array.header.base)),
            "extension 'capabilities': num_capabilities 2 with a NULL array");

  static const int32_t kInvalid[] = {MNT_CAPABILITY_OPTIMIZER_DEVICE_LR, 0};
  MNT_Capabilities_Extension invalid = MakeCapabilitiesExtension(kInvalid);
  EXPECT_EQ(Problem(Plugin(MNT_ABI_MINOR, &invalid.header.base)),
            "extension 'capabilities': capabilities[1] is 0 (values start at 1)");

  // An empty list and values this SDK does not know (a later minor's) are fine.
  MNT_Capabilities_Extension empty = MakeCapabilitiesExtension(nullptr, 0);
  EXPECT_EQ(Problem(Plugin(MNT_ABI_MINOR, &empty.header.base)), "");
  static const int32_t kLater[] = {1000};
  MNT_Capabilities_Extension later = MakeCapabilitiesExtension(kLater);
  EXPECT_EQ(Problem(Plugin(MNT_ABI_MINOR, &later.header.base)), "");
}

TEST(ExtensionChainTest, PluginsOlderThan19HaveNoExtensionsAHostKnows) {
  // ABI 1.0-1.8 defined MNT_Extension_Base but no type: a link is not read
  // as a header, only the chain's shape is checked.
  MNT_Extension_Base bare{sizeof(MNT_Extension_Base), MNT_EXTENSION_TYPE_CAPABILITIES, nullptr};
  const MNT_Plugin_Api old = Plugin(8, &bare);
  EXPECT_FALSE(HasExtensionHeaders(&old));
  EXPECT_EQ(Problem(old), "");
  EXPECT_TRUE(Names(old).empty());
  EXPECT_EQ(FindExtension(&old, MNT_EXTENSION_TYPE_CAPABILITIES), nullptr);

  MNT_Extension_Base loop{sizeof(MNT_Extension_Base), MNT_EXTENSION_TYPE_NONE, nullptr};
  loop.next = &loop;
  EXPECT_NE(Problem(Plugin(3, &loop)).find("a cycle?"), std::string::npos);
}

}  // namespace
}  // namespace mnt::sdk
