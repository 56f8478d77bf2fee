import { describeRuntimeConformance } from "@assemblyline-agents/core/testkit";
import { nodeRuntimeKitSubject } from "../src/testkit/index.js";

describeRuntimeConformance("the Node host", nodeRuntimeKitSubject);
