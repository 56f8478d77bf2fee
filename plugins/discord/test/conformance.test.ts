import { describeChannelConformance } from "@assemblyline-agents/core/testkit";
import { discordChannelKitSubject } from "../src/testkit/index.js";

describeChannelConformance("discord", discordChannelKitSubject);
