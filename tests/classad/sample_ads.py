"""A realistic slot ad and job ad, in old syntax, shared by the differential tests."""

from __future__ import annotations

# fmt: off
MACHINE_AD_TEXT = "\n".join(
    [
        'MyType = "Machine"', 'TargetType = "Job"', 'Name = "slot1@exec01.example.org"',
        'Machine = "exec01.example.org"', 'SlotID = 1', 'SlotType = "Partitionable"',
        'PartitionableSlot = true', 'State = "Unclaimed"', 'Activity = "Idle"',
        'EnteredCurrentState = 1700000000', 'EnteredCurrentActivity = 1700000000',
        'MyCurrentTime = 1700003600', 'DaemonStartTime = 1699990000', 'LastHeardFrom = 1700003590',
        'UpdateSequenceNumber = 42', 'Cpus = 8', 'TotalCpus = 8.0', 'TotalSlotCpus = 8',
        'DetectedCpus = 8', 'Memory = 32000', 'TotalMemory = 32000', 'TotalSlotMemory = 32000',
        'DetectedMemory = 32000', 'Disk = 450000000', 'TotalDisk = 450000000',
        'TotalSlotDisk = 450000000.0', 'VirtualMemory = 33554432', 'Swap = 0',
        'KeyboardIdle = 1342', 'ConsoleIdle = 1342', 'LoadAvg = 0.12', 'CondorLoadAvg = 0.0',
        'TotalLoadAvg = 0.31',
        'TotalCondorLoadAvg = 0.0', 'OpSys = "LINUX"', 'OpSysAndVer = "AlmaLinux9"',
        'OpSysMajorVer = 9', 'OpSysName = "AlmaLinux"', 'Arch = "X86_64"', 'Mips = 34567',
        'KFlops = 2954320', 'HasFileTransfer = true', 'HasDocker = false', 'HasSingularity = true',
        'FileSystemDomain = "example.org"', 'UidDomain = "example.org"',
        'CondorVersion = "$CondorVersion: 23.9.6 2024-08-08 BuildID: 752706 PackageID: 23.9.6-1 $"',
        'CondorPlatform = "$CondorPlatform: x86_64_AlmaLinux9 $"',
        'StarterAbilityList = "HasFileTransfer,HasTDP,HasJobDeferral,HasVM"',
        'MachineResources = "Cpus Memory Disk Swap GPUs"', 'ChildCpus = { 2, 1 }',
        'ChildMemory = { 4096, 2048 }', 'ChildState = { "Claimed", "Claimed" }',
        'NumDynamicSlots = 2',        'GPUs = 1', 'AvailableGPUs = { GPUs_GPU_c4a646d7 }',
        ('GPUs_GPU_c4a646d7 = [ Id = "GPU-c4a646d7"; DeviceName = "Tesla V100-PCIE-16GB"; '
         'Capability = 7.0; GlobalMemoryMb = 16160; ECCEnabled = true; ClockMhz = 1380.0 ]'),
        'CpuBusy = ((LoadAvg - CondorLoadAvg) >= 0.5)', 'CpuBusyTime = 0',
        'KeyboardBusy = KeyboardIdle < 15 * 60', 'MachineBusy = (CpuBusy || KeyboardBusy)',
        'Start = KeyboardIdle > 15 * 60 && (LoadAvg - CondorLoadAvg) <= 0.3',
        'IsOwner = (START =?= false)',
        ('WithinResourceLimits = (MY.Cpus > 0 && TARGET.RequestCpus <= MY.Cpus && '
         'TARGET.RequestMemory <= MY.Memory && TARGET.RequestDisk <= MY.Disk)'),
        'Requirements = START && (WithinResourceLimits)',
        'Rank = ifThenElse(TARGET.Owner == "alice", 10, 0) + TARGET.JobPrio', 'CurrentRank = 0.0',
        'MaxJobRetirementTime = 0', 'ConsumptionCpus = quantize(target.RequestCpus, { 1 })',
        'ConsumptionMemory = quantize(target.RequestMemory, { 128 })',
        'ConsumptionDisk = quantize(target.RequestDisk, { 1024 })',
        'Unhibernate = MY.MachineLastMatchTime =!= undefined', 'SlotWeight = Cpus',
    ]
)

JOB_AD_TEXT = "\n".join(
    [
        'MyType = "Job"', 'TargetType = "Machine"', 'ClusterId = 1234', 'ProcId = 0',
        'GlobalJobId = "submit.example.org#1234.0#1699999000"', 'Owner = "alice"',
        'User = "alice@example.org"', 'AccountingGroup = "physics.alice"', 'JobUniverse = 5',
        'JobStatus = 1', 'JobPrio = 0', 'NiceUser = false', 'Cmd = "/home/alice/analysis/run.sh"',
        'Arguments = "-n 10 --seed 42"', 'Iwd = "/home/alice/analysis"',
        'Environment = "OMP_NUM_THREADS=1 HOME=/home/alice"', 'In = "/dev/null"', 'Out = "run.out"',
        'Err = "run.err"', 'UserLog = "/home/alice/analysis/run.log"', 'RequestCpus = 1',
        ('RequestMemory = ifThenElse(MemoryUsage =!= undefined, MemoryUsage, (ImageSize + '
         '1023) / 1024)'),
        'RequestDisk = DiskUsage', 'ImageSize = 2500', 'ImageSize_RAW = 2324', 'DiskUsage = 3000',
        'DiskUsage_RAW = 2900', 'MemoryUsage = ((ResidentSetSize + 1023) / 1024)',
        'QDate = 1699999000', 'EnteredCurrentStatus = 1699999000', 'CompletionDate = 0',
        'NumJobStarts = 0', 'JobRunCount = 0', 'ExitBySignal = false', 'OnExitRemove = true',
        'OnExitHold = false', 'PeriodicHold = false', 'PeriodicRemove = false',
        'LeaveJobInQueue = false', 'WhenToTransferOutput = "ON_EXIT"',
        'ShouldTransferFiles = "YES"',        'TransferInput = "data.csv,params.json"',
        'TransferInputStats = [ CedarFilesCount = 2; CedarSizeBytes = 48213 ]', 'MaxHosts = 1',
        'MinHosts = 1', 'JobLeaseDuration = 2400', 'RemoteWallClockTime = 0.0',
        'CumulativeSlotTime = 0', 'LastRejMatchReason = "no match found"',
        'AutoClusterAttrs = "JobUniverse,RequestCpus,RequestDisk,RequestMemory"',
        'JobBatchName = "analysis"',
        ('Requirements = (TARGET.Arch == "X86_64") && (TARGET.OpSys == "LINUX") && '
         '(TARGET.Disk >= RequestDisk) && (TARGET.Memory >= RequestMemory) && '
         '(TARGET.Cpus >= RequestCpus) && (TARGET.HasFileTransfer)'),
        'Rank = TARGET.Mips / 1000.0',
    ]
)
# fmt: on


def attribute_names(ad_text: str) -> list[str]:
    """The attribute names of one of the old-syntax ads above, in order."""
    return [line.split("=", 1)[0].strip() for line in ad_text.splitlines() if "=" in line]
