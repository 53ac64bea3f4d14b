import { describe, expect, it } from 'vitest';
import { limitOf, MAX_TENANT_CHARS, parseTenantLimits, tenantOf } from '../../../src/worker/tenants/tenant-settings.ts';

function parsed(limits: unknown) {
  const problems: string[] = [];
  const settings = parseTenantLimits(JSON.stringify(limits), 'tenant', 3_600_000, problems);
  return { settings, problems };
}

describe('tenantOf: the metadata entry named by TENANT_METADATA_KEY', () => {
  it('trimmed; none when absent or blank; cut to the longest name', () => {
    expect(tenantOf({ tenant: ' shop ' }, 'tenant')).toBe('shop');
    expect(tenantOf({ team: 'shop' }, 'tenant')).toBeUndefined();
    expect(tenantOf({ tenant: '  ' }, 'tenant')).toBeUndefined();
    expect(tenantOf({ tenant: 'x'.repeat(100) }, 'tenant')).toHaveLength(MAX_TENANT_CHARS);
  });
});

describe('parseTenantLimits (TENANT_LIMITS)', () => {
  it('named tenants and "*" for every other; no tenant: no limit', () => {
    const { settings, problems } = parsed({ shop: { spendCapPerDay: '50', ratePerSecond: 20 }, '*': { spendCapPerHour: '1.5' } });
    expect(problems).toEqual([]);
    expect(limitOf(settings, 'shop')).toEqual({ spend: { caps: { hour: undefined, day: '50' }, hourMs: 3_600_000 }, ratePerSecond: 20, velocity: undefined });
    expect(limitOf(settings, 'blog')).toEqual({ spend: { caps: { hour: '1.5', day: undefined }, hourMs: 3_600_000 }, ratePerSecond: 0, velocity: undefined });
    expect(limitOf(settings, undefined)).toBeUndefined();
    expect(limitOf(parsed({ shop: { ratePerSecond: 1 } }).settings, 'blog')).toBeUndefined();
  });

  it('velocity limits per tenant, as VELOCITY_{PREFIX,REGION}_PER_{MINUTE,DAY}; unset ones are 0 (none)', () => {
    const { settings, problems } = parsed({ shop: { velocityPrefixPerMinute: 5, velocityRegionPerDay: 1_000 } });
    expect(problems).toEqual([]);
    expect(limitOf(settings, 'shop')?.velocity).toEqual({ prefix: { minute: 5, day: 0 }, region: { minute: 0, day: 1_000 } });
  });

  it('names each problem with the tenant and the field', () => {
    expect(parsed({ shop: { spendCapPerDay: '-1' } }).problems).toEqual([
      'TENANT_LIMITS "shop" spendCapPerDay: must be a decimal amount above 0 and at most 1000000000, at most 6 decimals (e.g. "25.50")',
    ]);
    expect(parsed({ shop: { spendCapPerHour: '10', spendCapPerDay: '5' } }).problems).toEqual([
      'TENANT_LIMITS "shop": spendCapPerDay is below spendCapPerHour, so the hourly cap could never be reached',
    ]);
    expect(parsed({ shop: { ratePerSecond: 0 } }).problems).toEqual(['TENANT_LIMITS "shop" ratePerSecond: must be a number above 0 and at most 100000']);
    const known =
      'spendCapPerHour, spendCapPerDay, ratePerSecond, velocityPrefixPerMinute, velocityPrefixPerDay, velocityRegionPerMinute, velocityRegionPerDay';
    expect(parsed({ shop: {} }).problems).toEqual([`TENANT_LIMITS "shop": sets no limit (${known})`]);
    expect(parsed({ shop: { spendCap: '5' } }).problems[0]).toBe(`TENANT_LIMITS "shop": unknown field "spendCap" (known: ${known})`);
    expect(parsed({ shop: { velocityPrefixPerMinute: 2.5, velocityRegionPerDay: 0 } }).problems).toEqual([
      'TENANT_LIMITS "shop" velocityPrefixPerMinute: must be a whole number of recipients from 1 to 100000000',
      'TENANT_LIMITS "shop" velocityRegionPerDay: must be a whole number of recipients from 1 to 100000000',
    ]);
    expect(parsed([1]).problems).toEqual(['TENANT_LIMITS: must be a JSON object from tenant name (or "*") to its limits']);
    const problems: string[] = [];
    parseTenantLimits('{', 'tenant', 3_600_000, problems);
    expect(problems[0]).toContain('TENANT_LIMITS: is not JSON');
  });
});
