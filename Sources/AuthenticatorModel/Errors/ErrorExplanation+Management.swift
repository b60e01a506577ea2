import KeyKit

// The Management application's errors and the problems found in a configuration change before it is sent.

extension ManagementError: ExplainableError {
    var explanation: ErrorExplanation {
        switch self {
        case .lockCodeLength: return ErrorExplanation(kind: .lockCodeFormat)
        case .wrongLockCode: return ErrorExplanation(kind: .wrongLockCode)
        case .configurationRefused: return ErrorExplanation(kind: .configRefused)
        case .configurationTooLarge(let n): return ErrorExplanation(kind: .configTooLarge, ["bytes": String(n)])
        case .needsFirmware(let feature, let minimum, let actual):
            return ErrorExplanation(
                kind: .configNeedsFirmware, ["minimum": minimum.description, "actual": actual.description],
                nested: ["feature": UIText("config.feature." + feature.rawValue)])
        case .resetRefused(let sw): return ErrorExplanation(kind: .deviceResetRefused, ["status": sw.hexString])
        }
    }
}

extension ConfigProblem: ExplainableError {
    var explanation: ErrorExplanation {
        switch self {
        case .unknownApplication(let name):
            return ErrorExplanation(
                kind: .unknownApplication,
                [
                    "name": name,
                    "names": Capabilities.named.map(\.1).joined(separator: ", "),
                ])
        case .transportNotSupported(let t):
            return ErrorExplanation(kind: .transportNotSupported, ["transport": t.label])
        case .notSupported(let apps, let t):
            return ErrorExplanation(
                kind: .applicationNotSupported,
                ["applications": ApplicationsChange.names(apps), "transport": t.label])
        case .enableAndDisable(let apps):
            return ErrorExplanation(kind: .enableAndDisable, ["applications": ApplicationsChange.names(apps)])
        case .nothingAsked: return ErrorExplanation(kind: .nothingAsked)
        case .disablesAll: return ErrorExplanation(kind: .disablesAll)
        case .cutsConnection(let interface):
            return ErrorExplanation(kind: .cutsConnection, ["interface": interface.rawValue.uppercased()])
        case .needsForce: return ErrorExplanation(kind: .needsForce)
        case .declined: return ErrorExplanation(kind: .declined)
        case .lockCodeFormat: return ErrorExplanation(kind: .lockCodeFormat)
        case .lockCodeMismatch: return ErrorExplanation(kind: .lockCodeMismatch)
        case .notLocked: return ErrorExplanation(kind: .notLocked)
        case .timeoutRange(let option, let maximum):
            return ErrorExplanation(kind: .timeoutRange, ["option": option, "maximum": String(maximum)])
        }
    }
}
