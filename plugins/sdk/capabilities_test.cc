// HasCapability (ABI 1.9): a 1.9 plugin is answered from the capabilities
// it advertises (whatever its minor would say), an older one from the
// legacy table of the minor that introduced each capability.
#include "plugins/sdk/capabilities.h"

#include <string>

#include "gtest/gtest.h"
#include "plugins/abi/mantissa.h"
#include "plugins/sdk/export.h"

namespace mnt::sdk {
namespace {

MNT_Plugin_Api Plugin(MNT_PluginKind kind, int32_t minor, MNT_Extension_Base* chain = nullptr) {
  MNT_Plugin_Api api =
      MakePluginApi(kind, "p", "test", nullptr, nullptr, nullptr, nullptr, chain);
  api.abi_version.minor_version = minor;
  return api;
}

TEST(CapabilitiesTest, A19PluginIsAnsweredFromItsList) {
  static const int32_t kCaps[] = {MNT_CAPABILITY_ADAMW_STEP_COUNTER,
                                  MNT_CAPABILITY_CROSS_ENTROPY_GRAD_MULTIPLIER};
  MNT_Capabilities_Extension caps = MakeCapabilitiesExtension(kCaps);
  const MNT_Plugin_Api api = Plugin(MNT_PLUGIN_KIND_BACKEND, MNT_ABI_MINOR, &caps.header.base);
  EXPECT_TRUE(HasCapability(&api, MNT_CAPABILITY_ADAMW_STEP_COUNTER));
  EXPECT_TRUE(HasCapability(&api, MNT_CAPABILITY_CROSS_ENTROPY_GRAD_MULTIPLIER));
  // Its minor is newer than 1.5 and 1.7, but it does not advertise these.
  EXPECT_FALSE(HasCapability(&api, MNT_CAPABILITY_AMP_UPDATE_SCALE_RECIPE));
  EXPECT_FALSE(HasCapability(&api, MNT_CAPABILITY_OPTIMIZER_DEVICE_LR));
  EXPECT_FALSE(HasCapability(&api, MNT_CAPABILITY_STOCHASTIC_ROUNDING));
  EXPECT_EQ(FindCapabilitiesExtension(&api), &caps);
}

TEST(CapabilitiesTest, A19PluginWithoutTheExtensionOffersNothing) {
  const MNT_Plugin_Api api = Plugin(MNT_PLUGIN_KIND_BACKEND, MNT_ABI_MINOR);
  for (const CapabilityInfo& c : kCapabilities) {
    EXPECT_FALSE(HasCapability(&api, c.capability)) << c.name;
  }
  EXPECT_FALSE(HasCapability(nullptr, MNT_CAPABILITY_OPTIMIZER_DEVICE_LR));
}

TEST(CapabilitiesTest, FoundBehindOtherExtensionsAndUnknownTypes) {
  static const int32_t kCaps[] = {MNT_CAPABILITY_PRECISION_OPTIONS};
  MNT_Capabilities_Extension caps = MakeCapabilitiesExtension(kCaps);
  MNT_Extension_Header unknown{};
  unknown.base = {MNT_Extension_Header_STRUCT_SIZE, static_cast<MNT_ExtensionType>(99),
                  &caps.header.base};
  unknown.name = "later";
  unknown.version = 3;
  const MNT_Plugin_Api api = Plugin(MNT_PLUGIN_KIND_PRECISION, MNT_ABI_MINOR, &unknown.base);
  EXPECT_TRUE(HasCapability(&api, MNT_CAPABILITY_PRECISION_OPTIONS));
}

TEST(CapabilitiesTest, AMalformedOrShortExtensionOffersNothing) {
  static const int32_t kCaps[] = {MNT_CAPABILITY_OPTIMIZER_DEVICE_LR};
  MNT_Capabilities_Extension caps = MakeCapabilitiesExtension(kCaps);
  caps.header.base.struct_size = MNT_Extension_Header_STRUCT_SIZE;  // no list
  const MNT_Plugin_Api short_ext =
      Plugin(MNT_PLUGIN_KIND_BACKEND, MNT_ABI_MINOR, &caps.header.base);
  EXPECT_FALSE(HasCapability(&short_ext, MNT_CAPABILITY_OPTIMIZER_DEVICE_LR));

  MNT_Capabilities_Extension self = MakeCapabilitiesExtension(nullptr, 0);
  self.header.base.next = &self.header.base;  // a cycle: the walk still ends
  const MNT_Plugin_Api looped = Plugin(MNT_PLUGIN_KIND_BACKEND, MNT_ABI_MINOR, &self.header.base);
  EXPECT_FALSE(HasCapability(&looped, MNT_CAPABILITY_OPTIMIZER_DEVICE_LR));
}

TEST(CapabilitiesTest, OlderPluginsAreAnsweredFromTheLegacyTable) {
  struct Case {
    MNT_PluginKind kind;
    MNT_Capability capability;
    int32_t since;
  };
  const Case cases[] = {
      {MNT_PLUGIN_KIND_BACKEND, MNT_CAPABILITY_ADAMW_STEP_COUNTER, 4},
      {MNT_PLUGIN_KIND_BACKEND, MNT_CAPABILITY_AMP_UPDATE_SCALE_RECIPE, 5},
      {MNT_PLUGIN_KIND_BACKEND, MNT_CAPABILITY_CROSS_ENTROPY_GRAD_MULTIPLIER, 6},
      {MNT_PLUGIN_KIND_BACKEND, MNT_CAPABILITY_OPTIMIZER_DEVICE_LR, 7},
      {MNT_PLUGIN_KIND_BACKEND, MNT_CAPABILITY_STOCHASTIC_ROUNDING, 7},
      {MNT_PLUGIN_KIND_PRECISION, MNT_CAPABILITY_PRECISION_OPTIONS, 5},
      {MNT_PLUGIN_KIND_MODEL, MNT_CAPABILITY_MODEL_DEVICE_LOSS_MULTIPLIER, 6},
      // Since 1.10: no plugin older than the extensions implies it.
      {MNT_PLUGIN_KIND_MODEL, MNT_CAPABILITY_MODEL_FP8_GEMMS, 10},
      // Since 1.11: likewise.
      {MNT_PLUGIN_KIND_BACKEND, MNT_CAPABILITY_OPTIMIZER_PIECES, 11},
      {MNT_PLUGIN_KIND_MODEL, MNT_CAPABILITY_MODEL_GRADIENT_READY, 11},
      // Since 1.13: likewise.
      {MNT_PLUGIN_KIND_MODEL, MNT_CAPABILITY_MODEL_FROZEN_PARAMS, 13},
      {MNT_PLUGIN_KIND_MODEL, MNT_CAPABILITY_MODEL_LORA, 13},
  };
  static_assert(std::size(cases) == std::size(kCapabilities), "a case per capability");
  for (const Case& c : cases) {
    SCOPED_TRACE(CapabilityName(c.capability));
    for (int32_t minor = 0; minor < kExtensionsSinceMinor; ++minor) {
      const MNT_Plugin_Api api = Plugin(c.kind, minor);
      EXPECT_EQ(HasCapability(&api, c.capability), minor >= c.since) << "1." << minor;
    }
    // Another kind's capability is not implied by any minor.
    const MNT_PluginKind other =
        c.kind == MNT_PLUGIN_KIND_MODEL ? MNT_PLUGIN_KIND_BACKEND : MNT_PLUGIN_KIND_MODEL;
    const MNT_Plugin_Api api = Plugin(other, 8);
    EXPECT_FALSE(HasCapability(&api, c.capability));
  }
}

// ABI 1.11's OPTIMIZER_PIECES has no legacy minor: a backend offers it only
// by listing it, whatever its minor; stochastic rounding does not imply it.
TEST(CapabilitiesTest, OptimizerPiecesIsOfferedOnlyWhenListed) {
  static const int32_t kRounding[] = {MNT_CAPABILITY_STOCHASTIC_ROUNDING};
  static const int32_t kPieces[] = {MNT_CAPABILITY_STOCHASTIC_ROUNDING,
                                    MNT_CAPABILITY_OPTIMIZER_PIECES};
  MNT_Capabilities_Extension rounding = MakeCapabilitiesExtension(kRounding);
  MNT_Capabilities_Extension pieces = MakeCapabilitiesExtension(kPieces);
  for (int32_t minor : {10, 11, MNT_ABI_MINOR}) {
    SCOPED_TRACE(minor);
    const MNT_Plugin_Api without = Plugin(MNT_PLUGIN_KIND_BACKEND, minor, &rounding.header.base);
    EXPECT_TRUE(HasCapability(&without, MNT_CAPABILITY_STOCHASTIC_ROUNDING));
    EXPECT_FALSE(HasCapability(&without, MNT_CAPABILITY_OPTIMIZER_PIECES));
    const MNT_Plugin_Api with = Plugin(MNT_PLUGIN_KIND_BACKEND, minor, &pieces.header.base);
    EXPECT_TRUE(HasCapability(&with, MNT_CAPABILITY_OPTIMIZER_PIECES));
  }
  for (int32_t minor = 0; minor < kExtensionsSinceMinor; ++minor) {
    const MNT_Plugin_Api legacy = Plugin(MNT_PLUGIN_KIND_BACKEND, minor);
    EXPECT_FALSE(HasCapability(&legacy, MNT_CAPABILITY_OPTIMIZER_PIECES)) << "1." << minor;
  }
  EXPECT_STREQ(CapabilityName(MNT_CAPABILITY_OPTIMIZER_PIECES), "OPTIMIZER_PIECES");
}

// ABI 1.11's MODEL_GRADIENT_READY: likewise only when a model lists it; FP8
// GEMMs do not imply it.
TEST(CapabilitiesTest, ModelGradientReadyIsOfferedOnlyWhenListed) {
  static const int32_t kFp8[] = {MNT_CAPABILITY_MODEL_FP8_GEMMS};
  static const int32_t kReady[] = {MNT_CAPABILITY_MODEL_FP8_GEMMS,
                                   MNT_CAPABILITY_MODEL_GRADIENT_READY};
  MNT_Capabilities_Extension fp8 = MakeCapabilitiesExtension(kFp8);
  MNT_Capabilities_Extension ready = MakeCapabilitiesExtension(kReady);
  for (int32_t minor : {10, 11, MNT_ABI_MINOR}) {
    SCOPED_TRACE(minor);
    const MNT_Plugin_Api without = Plugin(MNT_PLUGIN_KIND_MODEL, minor, &fp8.header.base);
    EXPECT_FALSE(HasCapability(&without, MNT_CAPABILITY_MODEL_GRADIENT_READY));
    const MNT_Plugin_Api with = Plugin(MNT_PLUGIN_KIND_MODEL, minor, &ready.header.base);
    EXPECT_TRUE(HasCapability(&with, MNT_CAPABILITY_MODEL_GRADIENT_READY));
  }
  for (int32_t minor = 0; minor < kExtensionsSinceMinor; ++minor) {
    const MNT_Plugin_Api legacy = Plugin(MNT_PLUGIN_KIND_MODEL, minor);
    EXPECT_FALSE(HasCapability(&legacy, MNT_CAPABILITY_MODEL_GRADIENT_READY)) << "1." << minor;
  }
  EXPECT_STREQ(CapabilityName(MNT_CAPABILITY_MODEL_GRADIENT_READY), "MODEL_GRADIENT_READY");
}

TEST(CapabilitiesTest, AnOlderPluginsChainIsNotRead) {
  // ABI 1.0-1.8 defined no extension types: whatever hangs on an older
  // plugin's chain, its minor answers.
  MNT_Capabilities_Extension empty = MakeCapabilitiesExtension(nullptr, 0);
  const MNT_Plugin_Api api = Plugin(MNT_PLUGIN_KIND_BACKEND, 7, &empty.header.base);
  EXPECT_TRUE(HasCapability(&api, MNT_CAPABILITY_OPTIMIZER_DEVICE_LR));
  EXPECT_EQ(FindCapabilitiesExtension(&api), nullptr);
}

TEST(CapabilitiesTest, NamesAndTheExtensionTheSdkBuilds) {
  EXPECT_STREQ(CapabilityName(MNT_CAPABILITY_OPTIMIZER_DEVICE_LR), "OPTIMIZER_DEVICE_LR");
  EXPECT_STREQ(CapabilityName(0), "UNKNOWN_CAPABILITY");
  EXPECT_STREQ(CapabilityName(1000), "UNKNOWN_CAPABILITY");
  static const int32_t kCaps[] = {MNT_CAPABILITY_STOCHASTIC_ROUNDING};
  MNT_Capabilities_Extension next = MakeCapabilitiesExtension(nullptr, 0);
  const MNT_Capabilities_Extension e = MakeCapabilitiesExtension(kCaps, &next.header.base);
  EXPECT_EQ(e.header.base.struct_size, size_t{MNT_Capabilities_Extension_STRUCT_SIZE});
  EXPECT_EQ(e.header.base.type, MNT_EXTENSION_TYPE_CAPABILITIES);
  EXPECT_EQ(e.header.base.next, &next.header.base);
  EXPECT_STREQ(e.header.name, "capabilities");
  EXPECT_EQ(e.header.version, MNT_CAPABILITIES_EXTENSION_VERSION);
  EXPECT_EQ(e.capabilities, kCaps);
  EXPECT_EQ(e.num_capabilities, 1u);
}

}  // namespace
}  // namespace mnt::sdk
